// A scripted ACP agent (the SDK's agent side, a real child process) for the
// console's ordering test: every prompt streams some text, asks permission,
// then streams the rest, so a card lands between two parts of one answer.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

let sessions = 0;
const app = acp
  .agent({ name: "console-fake-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "console-fake", version: "1" },
  }))
  .onRequest("session/new", () => ({ sessionId: `console-${++sessions}` }))
  .onNotification("session/cancel", () => undefined)
  .onRequest("session/prompt", async ({ params, client }) => {
    const say = (text) =>
      client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
      });
    for (const word of ["Let ", "me ", "check ", "first."]) await say(word);
    const res = await client.request("session/request_permission", {
      sessionId: params.sessionId,
      toolCall: {
        toolCallId: "rm-1",
        title: "rm -rf build",
        rawInput: { command: "rm -rf build", description: "Remove the build directory" },
      },
      options: [
        { optionId: "allow_once", kind: "allow_once", name: "Allow once" },
        { optionId: "deny", kind: "reject_once", name: "Deny" },
      ],
    });
    const allowed = res.outcome.outcome === "selected" && res.outcome.optionId === "allow_once";
    for (const word of [" Then ", allowed ? "I removed it." : "I left it."]) await say(word);
    return { stopReason: "end_turn" };
  });

const connection = app.connect(
  acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);
void connection.closed.then(() => process.exit(0));
