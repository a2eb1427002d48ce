import { CLOSE_CODES, LIMITS } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSimulatorBackend } from "../src/index.js";
import { HARD_MAX_PAYLOAD } from "../src/transport/ws/server.js";
import { createConversation, pingOfSize, RawClient, send, startServer, type TestServer } from "./helpers.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startServer();
});
afterAll(() => ts.cleanup());

/** A ping frame of exactly `bytes` bytes (padding in an ignored extra field). */
async function expectError(c: RawClient, frame: unknown, code: string, requestId?: string) {
  c.send(frame);
  const err = await c.next("error");
  expect(err.error.code).toBe(code);
  expect(err.request_id).toBe(requestId);
  expect(err.ts).toMatch(/Z$/);
  // The connection carries on.
  await c.ok({ type: "ping" }, "pong");
  return err;
}

describe("request errors keep the connection open", () => {
  it("invalid_json, unknown_type, bad_request echo request_id when usable", async () => {
    const c = await RawClient.connect(ts.wsUrl);
    await expectError(c, "{not json", "invalid_json");
    await expectError(c, Buffer.from([0xff, 0xfe, 0x7b]), "invalid_json");
    await expectError(c, { type: "nope", request_id: "u1" }, "unknown_type", "u1");
    await expectError(c, { type: "ready", request_id: "u2" }, "unknown_type", "u2");
    await expectError(c, { request_id: "b0" }, "bad_request", "b0");
    await expectError(c, [1, 2], "bad_request");
    await expectError(c, { type: "conversation.open", request_id: "b1" }, "bad_request", "b1");
    await expectError(
      c,
      { type: "conversation.open", conversation_id: "x", limit: 0, request_id: "b2" },
      "bad_request",
      "b2",
    );
    await expectError(
      c,
      { type: "conversation.rename", conversation_id: "x", name: "   ", request_id: "b3" },
      "bad_request",
      "b3",
    );
    await expectError(
      c,
      { type: "chat.send", conversation_id: "x", text: " \n ", request_id: "b4" },
      "bad_request",
      "b4",
    );
    c.close();
  });

  it("conversation_not_found and not_found", async () => {
    const c = await RawClient.connect(ts.wsUrl);
    const missing = "0".repeat(32);
    for (const frame of [
      { type: "conversation.open", conversation_id: missing },
      { type: "conversation.rename", conversation_id: missing, name: "x" },
      { type: "conversation.delete", conversation_id: missing },
      { type: "chat.send", conversation_id: missing, text: "hi" },
      { type: "run.cancel", conversation_id: missing, run_id: "r" },
    ]) {
      await expectError(c, { ...frame, request_id: "q" }, "conversation_not_found", "q");
    }
    const id = await createConversation(c);
    await expectError(
      c,
      { type: "run.cancel", conversation_id: id, run_id: "stale", request_id: "s" },
      "not_found",
      "s",
    );
    // Another conversation's active run is not this conversation's: not_found, and it runs on.
    const other = await createConversation(c);
    const running = await send(c, other, "/sim slow");
    await expectError(
      c,
      { type: "run.cancel", conversation_id: id, run_id: running, request_id: "o" },
      "not_found",
      "o",
    );
    const cancelled = await c.ok(
      { type: "run.cancel", conversation_id: other, run_id: running },
      "run.finished",
    );
    expect(cancelled).toMatchObject({ run_id: running, status: "cancelled" });
    await expectError(
      c,
      {
        type: "chat.send",
        conversation_id: id,
        text: "hi",
        attachment_ids: ["a".repeat(32)],
        request_id: "a",
      },
      "bad_request",
      "a",
    );
    c.close();
  });
});

describe("limits", () => {
  it("chat text of exactly 64,000 characters is accepted; 64,001 gets too_large", async () => {
    const c = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(c);
    const runId = await send(c, id, "a".repeat(LIMITS.chatTextChars));
    await c.run(runId);
    // Characters are code points: 64,000 astral characters are 128,000 UTF-16 units.
    await c.run(await send(c, id, "😀".repeat(LIMITS.chatTextChars)));
    const err = await expectError(
      c,
      { type: "chat.send", conversation_id: id, text: "a".repeat(LIMITS.chatTextChars + 1), request_id: "t" },
      "too_large",
      "t",
    );
    expect(err.error.message).not.toContain("aaaa");
    c.close();
  });

  it("a frame of exactly 2 MiB is accepted", async () => {
    const c = await RawClient.connect(ts.wsUrl);
    const frame = pingOfSize(LIMITS.frameBytes);
    expect(Buffer.byteLength(frame)).toBe(LIMITS.frameBytes);
    c.send(frame);
    expect((await c.next("pong")).request_id).toBe("big");
    c.close();
  });

  it("a frame of 2 MiB + 1 gets too_large, then close 1009 (before hello too)", async () => {
    for (const c of [await RawClient.connect(ts.wsUrl), await RawClient.open(ts.wsUrl)]) {
      c.send(pingOfSize(LIMITS.frameBytes + 1));
      expect((await c.next("error")).error.code).toBe("too_large");
      expect((await c.closed).code).toBe(CLOSE_CODES.messageTooBig);
    }
  });

  it("a frame over the hard cap is closed 1009 by ws itself; other clients are unaffected", async () => {
    const other = await RawClient.connect(ts.wsUrl);
    const c = await RawClient.connect(ts.wsUrl);
    c.send(pingOfSize(HARD_MAX_PAYLOAD + 1));
    expect((await c.closed).code).toBe(CLOSE_CODES.messageTooBig);
    await other.ok({ type: "ping" }, "pong");
    other.close();
  });
});

describe("internal errors", () => {
  it("a failing handler becomes internal_error with no stack or path; the server carries on", async () => {
    const sim = createSimulatorBackend({ delayMs: 1 });
    const broken = await startServer({
      agent: {
        ...sim,
        createSession: async () => {
          throw new Error("ENOENT: /var/lib/secret/path at Object.<anonymous> (file.js:1:1)");
        },
      },
    });
    try {
      const c = await RawClient.connect(broken.wsUrl);
      const err = await c.request({ type: "conversation.create" }, "conversation.created");
      expect(err).toMatchObject({
        type: "error",
        error: { code: "internal_error", message: "Internal server error" },
      });
      await c.ok({ type: "conversation.list" }, "conversation.snapshot");
      c.close();
    } finally {
      await broken.cleanup();
    }
  });
});
