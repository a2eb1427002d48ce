import { describe, expect, it } from "vitest";
import { codePointLength, decodeClientFrame, decodeServerFrame, LIMITS, REPLY_TYPES } from "../src/index.js";

const conv = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
const hex = (i: number) => i.toString(16).padStart(32, "0");
const send = (extra: Record<string, unknown>) =>
  decodeClientFrame(JSON.stringify({ type: "chat.send", conversation_id: conv, text: "hi", ...extra }));
const code = (r: ReturnType<typeof decodeClientFrame>) => (r.ok ? "ok" : r.error.code);

describe("decodeClientFrame", () => {
  it("decodes strings, Buffers and ArrayBuffers", () => {
    const json = JSON.stringify({ type: "ping", request_id: "p" });
    for (const raw of [json, Buffer.from(json), new TextEncoder().encode(json).buffer]) {
      const r = decodeClientFrame(raw);
      expect(r).toEqual({ ok: true, message: { type: "ping", request_id: "p" } });
    }
  });

  it("drops unknown fields (tolerant reader)", () => {
    const r = decodeClientFrame(JSON.stringify({ type: "ping", future: 1 }));
    expect(r).toEqual({ ok: true, message: { type: "ping" } });
  });

  it("maps each failure to its protocol code and echoes request_id", () => {
    expect(decodeClientFrame("{nope")).toMatchObject({ ok: false, error: { code: "invalid_json" } });
    expect(decodeClientFrame(Buffer.from([0xff, 0xfe, 0x7b]))).toMatchObject({
      error: { code: "invalid_json" },
    });
    expect(decodeClientFrame("42")).toMatchObject({ error: { code: "bad_request" } });
    expect(decodeClientFrame('{"type":"nope","request_id":"r1"}')).toEqual({
      ok: false,
      error: { code: "unknown_type", message: "unknown message type", request_id: "r1" },
    });
    expect(decodeClientFrame('{"type":"toString"}')).toMatchObject({ error: { code: "unknown_type" } });
    expect(
      decodeClientFrame('{"type":"yolo.set","conversation_id":"c","enabled":"yes","request_id":"r2"}'),
    ).toEqual({
      ok: false,
      error: { code: "bad_request", message: "enabled must be boolean", request_id: "r2" },
    });
  });

  it("accepts a frame of exactly 2 MiB and rejects 2 MiB + 1 byte with too_large", () => {
    const frame = (bytes: number) => {
      const head = '{"type":"ping","pad":"';
      return `${head}${"x".repeat(bytes - head.length - 2)}"}`;
    };
    expect(Buffer.byteLength(frame(LIMITS.frameBytes))).toBe(2 * 1024 * 1024);
    expect(code(decodeClientFrame(frame(LIMITS.frameBytes)))).toBe("ok");
    expect(code(decodeClientFrame(frame(LIMITS.frameBytes + 1)))).toBe("too_large");
    expect(code(decodeClientFrame(Buffer.from(frame(LIMITS.frameBytes + 1))))).toBe("too_large");
  });

  it("accepts 64,000 characters of chat text and rejects 64,001 with too_large", () => {
    expect(code(send({ text: "x".repeat(64_000) }))).toBe("ok");
    expect(code(send({ text: "x".repeat(64_001) }))).toBe("too_large");
  });

  it("counts characters as Unicode code points", () => {
    const emoji = "😀".repeat(64_000); // 128,000 UTF-16 units
    expect(codePointLength(emoji)).toBe(64_000);
    expect(code(send({ text: emoji }))).toBe("ok");
    expect(code(send({ text: `${emoji}😀` }))).toBe("too_large");
  });

  it("rejects blank text, and names the field", () => {
    expect(send({ text: " \n\t " })).toMatchObject({
      error: { code: "bad_request", message: "text must not be blank" },
    });
    expect(send({ text: undefined })).toMatchObject({ error: { message: "text is required" } });
  });

  it("accepts 10 distinct attachment IDs, rejects 11 and duplicates", () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => hex(i));
    expect(code(send({ attachment_ids: ids(10) }))).toBe("ok");
    expect(code(send({ attachment_ids: ids(11) }))).toBe("bad_request");
    expect(code(send({ attachment_ids: [hex(1), hex(1)] }))).toBe("bad_request");
    expect(code(send({ attachment_ids: ["../etc/passwd"] }))).toBe("bad_request");
  });

  it("accepts any positive integer conversation.open limit (the server caps it at 500)", () => {
    const open = (limit: unknown) =>
      code(decodeClientFrame(JSON.stringify({ type: "conversation.open", conversation_id: conv, limit })));
    expect([open(1), open(500), open(501), open(10_000)]).toEqual(["ok", "ok", "ok", "ok"]);
    expect([open(0), open(-1), open(1.5), open("5"), open(null)]).toEqual([
      "bad_request",
      "bad_request",
      "bad_request",
      "bad_request",
      "bad_request",
    ]);
  });

  it("accepts exactly the reasoning effort set", () => {
    for (const effort of ["none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"]) {
      expect(code(decodeClientFrame(JSON.stringify({ type: "reasoning.set", effort })))).toBe("ok");
    }
    expect(code(decodeClientFrame(JSON.stringify({ type: "reasoning.set", effort: "HIGH" })))).toBe(
      "bad_request",
    );
  });

  it("never echoes a hello's secret in an error", () => {
    const secret = "hunter2-super-secret";
    const frames = [
      { type: "hello", secret, protocol_version: "1" },
      { type: "hello", secret: [secret], protocol_version: 1 },
      { type: "hello", secret: secret.repeat(1000), protocol_version: 1 },
      { type: "hello", secret, protocol_version: 1.5, request_id: 5 },
    ];
    for (const frame of frames) {
      const r = decodeClientFrame(JSON.stringify(frame));
      expect(r.ok).toBe(false);
      expect(JSON.stringify(r)).not.toContain("hunter2");
    }
  });

  it("does not echo an overlong request_id", () => {
    const r = decodeClientFrame(JSON.stringify({ type: "nope", request_id: "r".repeat(257) }));
    expect(r).toMatchObject({ ok: false, error: { code: "unknown_type" } });
    expect(r.ok || r.error.request_id).toBeUndefined();
  });
});

describe("the ID of an answer is checked first", () => {
  it("a schema violation of approval.respond / clarify.respond carries the valid ID it answers", () => {
    const respond = (frame: Record<string, unknown>) => decodeClientFrame(JSON.stringify(frame));
    expect(
      respond({ type: "approval.respond", approval_id: "a1", choice: "forever", request_id: "r8" }),
    ).toEqual({
      ok: false,
      error: {
        code: "bad_request",
        message: "choice must be one of: once, session, always, deny",
        request_id: "r8",
        answers: { approval_id: "a1" },
      },
    });
    expect(
      respond({ type: "clarify.respond", clarify_id: "c1", response: "x".repeat(64_001) }),
    ).toMatchObject({
      error: { code: "too_large", answers: { clarify_id: "c1" } },
    });
    expect(respond({ type: "clarify.respond", clarify_id: "c1" })).toMatchObject({
      error: { answers: { clarify_id: "c1" } },
    });
  });

  it("carries no ID when the ID itself is missing or malformed, or for other types", () => {
    const errorOf = (frame: Record<string, unknown>) => {
      const r = decodeClientFrame(JSON.stringify(frame));
      return r.ok ? undefined : r.error;
    };
    expect(errorOf({ type: "approval.respond", choice: "forever" })).not.toHaveProperty("answers");
    expect(errorOf({ type: "approval.respond", approval_id: "", choice: "once" })).not.toHaveProperty(
      "answers",
    );
    expect(errorOf({ type: "approval.respond", approval_id: 7, choice: "x" })).not.toHaveProperty("answers");
    expect(errorOf({ type: "yolo.set", conversation_id: "c", enabled: "yes" })).not.toHaveProperty("answers");
  });
});

describe("decodeServerFrame", () => {
  it("decodes a server event and rejects a client type", () => {
    expect(decodeServerFrame('{"type":"pong","ts":"2026-09-02T18:00:00Z"}').ok).toBe(true);
    expect(decodeServerFrame('{"type":"ping"}')).toMatchObject({ error: { code: "unknown_type" } });
  });
});

describe("REPLY_TYPES", () => {
  it("maps every request to a reply (all but presence; see limits.test.ts)", () => {
    // + activity (tool.get), modes (modes.list, mode.set, commands.list), inbox (conversation.read, .archive, .search),
    // workspaces (agents.list, workspaces.list), changes (changes.list, .diff)
    expect(Object.keys(REPLY_TYPES)).toHaveLength(18 + 11 + 1 + 3 + 3 + 2 + 2);
    expect(REPLY_TYPES["conversation.open"]).toBe("conversation.history");
  });
});
