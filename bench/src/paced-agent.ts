// A real ACP agent (child process over stdio, the SDK's agent side) that
// streams answers like an LLM-backed agent does: `stream <chars> <chunk> <ms>`
// sends `agent_message_chunk`s of <chunk> characters every <ms> ms (`think …` the same as
// `agent_thought_chunk`s, and no answer). Chunk
// emission times go to BENCH_TIMELINE so the benchmark can measure
// agent-chunk → client latency.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { pace, parseSpec, writeTimeline } from "./stream-text.js";

let sessions = 0;
const cancels = new Map<string, AbortController>();

const app = acp
  .agent({ name: "paced-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "paced", version: "1" },
  }))
  .onRequest("session/new", () => ({ sessionId: `s${++sessions}` }))
  .onNotification("session/cancel", ({ params }) => cancels.get(params.sessionId)?.abort())
  .onRequest("session/prompt", async ({ params, client }) => {
    const first = params.prompt[0];
    const text = first?.type === "text" ? first.text.trim() : "";
    // `think <chars> <chunk> <ms>`: the same paced text as the agent's thinking, and no answer (its
    // times are not written: a thought stream runs beside a measured answer).
    const thinking = text.startsWith("think ");
    const spec = parseSpec(thinking ? `stream ${text.slice("think ".length)}` : text);
    if (!spec) return { stopReason: "end_turn" as const };
    const cancel = new AbortController();
    cancels.set(params.sessionId, cancel);
    const times = await pace(
      spec,
      (text) =>
        client.notify("session/update", {
          sessionId: params.sessionId,
          update: {
            sessionUpdate: thinking ? "agent_thought_chunk" : "agent_message_chunk",
            content: { type: "text", text },
          },
        }),
      cancel.signal,
    );
    cancels.delete(params.sessionId);
    if (!thinking) writeTimeline(times);
    return { stopReason: cancel.signal.aborted ? ("cancelled" as const) : ("end_turn" as const) };
  });

const stream = acp.ndJsonStream(
  Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
);
void app.connect(stream).closed.then(() => process.exit(0));
