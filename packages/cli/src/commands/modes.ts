import { type PhebyClient, PhebyError } from "@pheby/client";
import { FEATURE_MODES } from "@pheby/protocol";
import { type Command, EXIT, required } from "../command.js";
import { type Io, writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

/** The client, once the server enabled the modes extension (an older server does not know it). */
export function requireModes(client: PhebyClient): PhebyClient {
  if (!client.features.includes(FEATURE_MODES))
    throw new PhebyError(
      "not_implemented",
      "this server does not support agent modes and commands (the modes extension)",
    );
  return client;
}

/** Set a conversation's mode and say so on stderr (stdout stays the command's own output). */
export async function switchMode(
  client: PhebyClient,
  io: Io,
  conversationId: string,
  modeId: string,
): Promise<void> {
  const changed = await requireModes(client).setMode(conversationId, modeId);
  io.stderr.write(`[mode: ${changed.mode_id}]\n`);
}

export const modes: Command = {
  name: "modes",
  usage: "<conversation> [mode_id]",
  summary:
    "List the agent's modes for a conversation (* marks the current one; auto-approves: the agent runs tools without asking in it), or switch the conversation to one. The choice is the conversation's and outlives agent restarts.",
  examples: [
    'pheby modes "Trip planning"',
    'pheby modes "Trip planning" plan',
    "pheby modes 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 --json",
  ],
  async run({ positionals, flags, io, connect }) {
    const target = required(positionals, 0, "<conversation>");
    const modeId = positionals[1];
    const json = flags.json === true;
    const client = requireModes(await connect());
    const conversation_id = await resolveConversation(client, target);
    if (modeId !== undefined) {
      const changed = await client.setMode(conversation_id, modeId);
      if (json) writeJson(io, { conversation_id, mode_id: changed.mode_id });
      else writeLine(io, `mode: ${changed.mode_id}`);
      return EXIT.ok;
    }
    const snapshot = await client.listModes(conversation_id);
    if (json) {
      writeJson(io, {
        conversation_id,
        modes: snapshot.modes,
        current_mode_id: snapshot.current_mode_id,
      });
      return EXIT.ok;
    }
    if (snapshot.modes.length === 0) {
      writeLine(io, "The agent offers no modes.");
      return EXIT.ok;
    }
    const width = Math.max(...snapshot.modes.map((m) => m.mode_id.length));
    for (const m of snapshot.modes) {
      const current = m.mode_id === snapshot.current_mode_id ? "*" : " ";
      const auto = m.auto_approves ? "  [auto-approves]" : "";
      const description = m.description ? ` — ${m.description}` : "";
      writeLine(io, `${current} ${m.mode_id.padEnd(width)}  ${m.name}${description}${auto}`);
    }
    return EXIT.ok;
  },
};

export const commands: Command = {
  name: "commands",
  usage: "<conversation>",
  summary:
    'List the slash commands the conversation\'s agent accepts, as it last announced them. Run one as a message: pheby chat <conversation> "/name arguments".',
  examples: ['pheby commands "Trip planning"', "pheby commands 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 --json"],
  async run({ positionals, flags, io, connect }) {
    const target = required(positionals, 0, "<conversation>");
    const client = requireModes(await connect());
    const list = await client.listCommands(await resolveConversation(client, target));
    if (flags.json === true) for (const c of list) writeJson(io, c);
    else if (list.length === 0) writeLine(io, "The agent announced no commands.");
    else {
      const width = Math.max(...list.map((c) => c.name.length + 1 + (c.hint ? c.hint.length + 1 : 0)));
      for (const c of list) {
        const usage = `/${c.name}${c.hint ? ` ${c.hint}` : ""}`;
        writeLine(io, `${usage.padEnd(width)}  ${c.description}`.trimEnd());
      }
    }
    return EXIT.ok;
  },
};
