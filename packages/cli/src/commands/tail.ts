import type { ServerMessage } from "@pheby/protocol";
import { type Command, EXIT } from "../command.js";
import { note, writeJson, writeLine } from "../io.js";

/** A one-line human summary of any server frame. */
export function prettyFrame(m: ServerMessage, now = new Date()): string {
  const time = now.toISOString().slice(11, 19);
  const fields = Object.entries(m)
    .filter(([k]) => k !== "type" && k !== "ts")
    .map(([k, v]) => {
      const text = typeof v === "string" ? v : JSON.stringify(v);
      return `${k}=${text.length > 80 ? `${text.slice(0, 77)}...` : text}`;
    });
  return `${time} ${m.type.padEnd(22)} ${fields.join(" ")}`.trimEnd();
}

export const tail: Command = {
  name: "tail",
  usage: "[--pretty]",
  summary:
    "Print every event the server sends, one JSON object per line (--pretty for humans), until Ctrl-C. Reconnects automatically.",
  options: { pretty: { type: "boolean" } },
  examples: ["pheby tail", "pheby tail --pretty", "pheby tail | jq 'select(.type == \"tool.event\")'"],
  async run({ flags, io, connect }) {
    const client = await connect({ reconnect: true });
    client.on("*", (m) => (flags.pretty === true ? writeLine(io, prettyFrame(m)) : writeJson(io, m)));
    client.onInvalidFrame((f) => note(io, `invalid frame (${f.error.code}): ${f.raw.slice(0, 200)}`));
    client.onState((s) => note(io, `connection: ${s}`));
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      client.onState((s) => {
        if (s === "failed" || s === "closed") resolve();
      });
    });
    return client.state === "failed" ? EXIT.auth : EXIT.ok;
  },
};
