// Baseline: a bare ws server doing the minimum a JSON protocol must do per
// frame (JSON.parse + JSON.stringify), answering hello and ping like Pheby.
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";

const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/ws", maxPayload: 2 * 1024 * 1024 });
server.on("connection", (socket) => {
  socket.on("message", (data) => {
    const frame = JSON.parse(String(data)) as { type: string; request_id?: string };
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
