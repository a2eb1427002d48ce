import { CLOSE_CODES } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { expect, it } from "vitest";
import { captureLogs, createConversation, RawClient, SECRET, send, startServer } from "./helpers.js";

it("a client that stops reading is closed with 4503; others are unaffected", async () => {
  const logs = captureLogs("warn");
  const ts = await startServer({ logger: logs.logger, maxBufferedBytes: 1024 * 1024 });
  try {
    // Without compression, both: "/sim long" text deflates a thousandfold, so a compressed stream
    // would never queue enough to trip the cap (which is right: it costs the server no memory), and
    // deflating megabytes of deltas for the healthy client only slows a loaded CI machine down.
    const healthy = await RawClient.connect(ts.wsUrl, { perMessageDeflate: false });
    const slow = await RawClient.open(ts.wsUrl, { perMessageDeflate: false });
    slow.send({ type: "hello", secret: SECRET, protocol_version: 1 });
    await slow.next("ready");
    // Stop reading: the kernel buffers fill, then the server's send buffer for this peer grows.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();

    const id = await createConversation(healthy);
    const cut = () => logs.text().includes("slow consumer");
    for (let i = 0; i < 20 && !cut(); i++) {
      const runId = await send(healthy, id, "/sim long 1000000");
      // A megabyte answer in 8 cumulative deltas (~4.5 MB of frames, each schema-checked): generous
      // timeouts, since a loaded machine takes seconds over it and this test is not about speed.
      const finished = await healthy.next("run.finished", (m) => m.run_id === runId, 60_000);
      expect(finished.status).toBe("completed");
      const complete = healthy.frames.find(
        (m) => m.type === "message.complete" && m.message_id === messageIdOf(healthy.frames, runId),
      );
      expect(complete && "text" in complete && complete.text).toHaveLength(1_000_000);
    }
    expect(cut()).toBe(true);

    // Reading again, the slow client drains what was queued and then sees the 4503 close.
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    expect((await slow.closed).code).toBe(CLOSE_CODES.slowConsumer);
    await healthy.ok({ type: "ping" }, "pong");
    healthy.close();
  } finally {
    await ts.cleanup();
  }
}, 300_000);
