// Baseline: a bare ws server doing the minimum a JSON protocol must do per
// frame (JSON.parse + JSON.stringify), answering hello and ping like Pheby.
// `chat.send` with `stream <chars> <chunk> <ms>` streams the same answer, with
// the same pacing, as paced-agent.ts, broadcasting the frames Pheby would send
// (a cumulative message.delta per chunk) to every connection, serialised once.
import "./child-stats.js";
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";
import { answerText, pace, parseSpec, writeTimeline } from "./stream-text.js";

const server = new WebSocketServer({
  host: "127.0.0.1",
  port: 0,
  path: "/ws",
  maxPayload: 2 * 1024 * 1024,
  clientTracking: true,
});
const ids = { conversation_id: "c".repeat(32), message_id: `draft-${"d".repeat(32)}` };

function broadcast(frame: object): void {
  const data = JSON.stringify(frame);
  for (const socket of server.clients) if (socket.readyState === WebSocket.OPEN) socket.send(data);
}

async function stream(text: string): Promise<void> {
  const spec = parseSpec(text);
  if (!spec) return;
  let sofar = "";
  const times = await pace(spec, (chunk) => {
    sofar += chunk;
    broadcast({ type: "message.delta", ...ids, text: sofar, ts: new Date().toISOString() });
  });
  writeTimeline(times);
  broadcast({ type: "message.complete", ...ids, text: answerText(spec.chars), ts: new Date().toISOString() });
  broadcast({ type: "run.finished", conversation_id: ids.conversation_id, run_id: "r", status: "completed" });
}

server.on("connection", (socket) => {
  socket.on("message", (data) => {
    const frame = JSON.parse(String(data)) as { type: string; request_id?: string; text?: string };
    if (frame.type === "chat.send") {
      socket.send(
        JSON.stringify({ type: "run.accepted", ...ids, run_id: "r", request_id: frame.request_id }),
      );
      void stream(frame.text ?? "");
      return;
    }
    const reply =
      frame.type === "hello"
        ? {
            type: "ready",
            protocol_version: 1,
            server: "bare",
            ts: new Date().toISOString(),
            request_id: frame.request_id,
          }
        : { type: "pong", ts: new Date().toISOString(), request_id: frame.request_id };
    socket.send(JSON.stringify(reply));
  });
});
server.on("listening", () => console.log(`PORT ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
