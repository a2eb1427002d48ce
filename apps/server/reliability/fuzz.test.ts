// Protocol fuzzing of the built server, seeded with fast-check.
// Every generated frame carries the outcome the protocol prescribes for it (a typed error code,
// a close code, or a normal reply), computed from the generator's own category rather than by
// asking the server's decoder. Frames go one at a time on an authenticated connection, each
// followed by a `ping` whose `pong` delimits what the frame caused. Before-hello sequences use
// fresh connections from their own loopback source addresses so the lockout stays out of the way.
// Reproduce a failure with PHEBY_FUZZ_SEED=<seed printed in the report>.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { CLOSE_CODES, extensionsUsed, LIMITS, type ServerMessage } from "@pheby/protocol";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type App,
  createConversation,
  envNumber,
  Peer,
  percentile,
  rssMiB,
  SECRET,
  sleep,
  startApp,
} from "./harness.js";

const SEED = envNumber("PHEBY_FUZZ_SEED", 16_2026);
const BATCHES = envNumber("PHEBY_FUZZ_BATCHES", 100);
const BATCH_SIZE = 100;
/** Stated bound: the server's RSS after the run stays under this (it starts near 80 MiB). */
const RSS_BOUND_MIB = 256;

/** What the server must do with one frame. */
type Expect =
  | { kind: "error"; code: string; requestId?: string }
  | { kind: "close"; code: number; errorFirst?: string }
  | { kind: "reply" };
interface FrameCase {
  label: string;
  data: string | Buffer;
  binary?: boolean;
  expect: Expect;
}

const FIXTURES = join(
  dirname(createRequire(import.meta.url).resolve("@pheby/protocol/package.json")),
  "fixtures/valid/client",
);
// v1 frames only: the fuzzed connection enables no extension, so an extension's request is
// unknown_type and its fields are ignored (docs/protocol.md, Extensions), which this oracle does not model.
const TEMPLATES = readdirSync(FIXTURES)
  .filter((f) => !f.startsWith("hello") && !f.includes("unknown-field"))
  .map(
    (f) => JSON.parse(readFileSync(join(FIXTURES, f), "utf8")) as Record<string, unknown> & { type: string },
  )
  .filter((t) => extensionsUsed(t).length === 0);

/**
 * An answer to a question is checked by its ID first: the fixtures' IDs are never pending, so a frame
 * whose ID is intact gets *_not_found whatever else is wrong with it (docs/protocol.md, Decisions).
 */
const STALE_ANSWER: Record<string, { idField: string; code: string }> = {
  "approval.respond": { idField: "approval_id", code: "approval_not_found" },
  "clarify.respond": { idField: "clarify_id", code: "clarify_not_found" },
};

const deep = (levels: number, open: string, close: string, inner = "0") =>
  open.repeat(levels) + inner + close.repeat(levels);
const DEEP_ARRAY = deep(10_000, "[", "]");
const DEEP_OBJECT = deep(10_000, '{"a":', "}");

/** A value of a different JSON type than `original` (so the field is certainly invalid). */
function wrongValue(original: unknown): fc.Arbitrary<{ json: string; label: string }> {
  const options: fc.Arbitrary<{ json: string; label: string }>[] = [
    fc.constant({ json: DEEP_ARRAY, label: "10k-deep array" }),
    fc.constant({ json: DEEP_OBJECT, label: "10k-deep object" }),
    fc.dictionary(fc.string(), fc.jsonValue()).map((v) => ({ json: JSON.stringify(v), label: "object" })),
  ];
  if (typeof original !== "number")
    options.push(
      fc
        .oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(1e308), fc.constant(-1e308))
        .map((n) => ({ json: JSON.stringify(n), label: "number" })),
      fc.constant({ json: "123456789012345678901234567890e300", label: "huge number literal" }),
    );
  if (typeof original !== "string")
    options.push(fc.string().map((s) => ({ json: JSON.stringify(s), label: "string" })));
  if (typeof original !== "boolean")
    options.push(fc.boolean().map((b) => ({ json: String(b), label: "boolean" })));
  if (!Array.isArray(original))
    options.push(
      fc.array(fc.integer(), { maxLength: 5 }).map((a) => ({ json: JSON.stringify(a), label: "array" })),
    );
  return fc.oneof(...options);
}

/** A valid message (from the fixture corpus) with one of its fields replaced by a wrong type. */
const mutatedField: fc.Arbitrary<FrameCase> = fc
  .constantFrom(...TEMPLATES.filter((t) => Object.keys(t).length > 1))
  .chain((t) =>
    fc
      .constantFrom(...Object.keys(t).filter((k) => k !== "type"))
      .chain((key) => wrongValue(t[key]).map((v) => ({ t, key, v }))),
  )
  .map(({ t, key, v }) => {
    // Splice the raw JSON in so huge literals and deep nesting reach the server as written.
    const rest = { ...t };
    delete rest[key];
    const body = JSON.stringify(rest);
    const data = `${body.slice(0, -1)},${JSON.stringify(key)}:${v.json}}`;
    const rid = key === "request_id" ? undefined : (t.request_id as string | undefined);
    const stale = STALE_ANSWER[t.type];
    const code = stale && key !== stale.idField ? stale.code : "bad_request";
    return {
      label: `${t.type}.${key} := ${v.label}`,
      data,
      expect: { kind: "error", code, ...(rid ? { requestId: rid } : {}) },
    };
  });

/** Strings over each field's limit: chat text (too_large) and the bounded short fields (bad_request). */
const longString: fc.Arbitrary<FrameCase> = fc.oneof(
  fc.integer({ min: LIMITS.chatTextChars + 1, max: LIMITS.chatTextChars + 50_000 }).map((n) => ({
    label: `chat.send text of ${n} chars`,
    data: JSON.stringify({
      type: "chat.send",
      conversation_id: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
      text: "é".repeat(n),
      request_id: "long",
    }),
    expect: { kind: "error", code: "too_large", requestId: "long" } as Expect,
  })),
  fc.integer({ min: LIMITS.conversationNameChars + 1, max: 300_000 }).map((n) => ({
    label: `conversation.create name of ${n} chars`,
    data: JSON.stringify({ type: "conversation.create", name: "n".repeat(n), request_id: "long" }),
    expect: { kind: "error", code: "bad_request", requestId: "long" } as Expect,
  })),
  fc.integer({ min: LIMITS.requestIdChars + 1, max: 300_000 }).map((n) => ({
    label: `ping request_id of ${n} chars`,
    data: JSON.stringify({ type: "ping", request_id: "i".repeat(n) }),
    expect: { kind: "error", code: "bad_request" } as Expect,
  })),
);

const notJson: fc.Arbitrary<FrameCase> = fc
  .string({ unit: "binary", maxLength: 200 })
  .filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  })
  .map((s) => ({ label: "not JSON", data: s, expect: { kind: "error", code: "invalid_json" } }));

const notObject: fc.Arbitrary<FrameCase> = fc
  .oneof(
    fc
      .jsonValue()
      .filter((v) => typeof v !== "object" || v === null || Array.isArray(v))
      .map((v) => JSON.stringify(v)),
    fc.constant(DEEP_ARRAY),
  )
  .map((data) => ({ label: "JSON but not an object", data, expect: { kind: "error", code: "bad_request" } }));

const noType: fc.Arbitrary<FrameCase> = fc
  .tuple(
    fc.dictionary(fc.string(), fc.jsonValue()),
    fc.option(
      fc.jsonValue().filter((v) => typeof v !== "string"),
      { nil: undefined },
    ),
  )
  .map(([obj, type]) => {
    const o: Record<string, unknown> = { ...obj };
    delete o.type;
    if (type !== undefined) o.type = type;
    return {
      label: "object without a string type",
      data: JSON.stringify(o),
      expect: { kind: "error", code: "bad_request" } as Expect,
    };
  })
  .chain((c) => fc.oneof(fc.constant(c), fc.constant({ ...c, label: "10k-deep object", data: DEEP_OBJECT })));

const CLIENT_TYPES = new Set(TEMPLATES.map((t) => t.type as string).concat("hello"));
const unknownType: fc.Arbitrary<FrameCase> = fc
  .tuple(
    fc.oneof(
      fc.string(),
      fc.constantFrom("ready", "pong", "error", "run.finished", "__proto__", "constructor", "toString"),
    ),
    fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  )
  .filter(([type]) => !CLIENT_TYPES.has(type))
  .map(([type, rid]) => ({
    label: "unknown type",
    data: JSON.stringify({ type, ...(rid === undefined ? {} : { request_id: rid }) }),
    expect: {
      kind: "error",
      code: "unknown_type",
      ...(rid === undefined ? {} : { requestId: rid }),
    } as Expect,
  }));

/** Valid messages interleaved with the junk: the server answers them normally (error or not). */
const valid: fc.Arbitrary<FrameCase> = fc
  .constantFrom(...TEMPLATES)
  .map((t) => ({ label: `valid ${t.type}`, data: JSON.stringify(t), expect: { kind: "reply" } as Expect }));

const invalidUtf8Text: fc.Arbitrary<FrameCase> = fc
  .uint8Array({ minLength: 0, maxLength: 64 })
  .map((bytes) => ({
    label: "invalid UTF-8 in a text frame",
    data: Buffer.concat([Buffer.from('{"type":"ping","x":"'), Buffer.from([0xc3, 0x28]), Buffer.from(bytes)]),
    binary: false,
    expect: { kind: "close", code: 1007 } as Expect,
  }));

const binaryFrames: fc.Arbitrary<FrameCase> = fc.oneof(
  fc.uint8Array({ maxLength: 256 }).map((bytes) => ({
    label: "binary junk",
    data: Buffer.concat([Buffer.from([0xff]), Buffer.from(bytes)]),
    binary: true,
    expect: { kind: "error", code: "invalid_json" } as Expect,
  })),
  fc.constant({
    label: "binary ping",
    data: Buffer.from('{"type":"ping"}'),
    binary: true,
    expect: { kind: "reply" } as Expect,
  }),
);

const empty: fc.Arbitrary<FrameCase> = fc.boolean().map((binary) => ({
  label: `empty ${binary ? "binary" : "text"} frame`,
  data: binary ? Buffer.alloc(0) : "",
  binary,
  expect: { kind: "error", code: "invalid_json" } as Expect,
}));

/** A ping padded to exactly `bytes` bytes. */
function paddedPing(bytes: number): string {
  const head = '{"type":"ping","pad":"';
  return `${head}${"p".repeat(bytes - head.length - 2)}"}`;
}
const sized: fc.Arbitrary<FrameCase> = fc.constantFrom<FrameCase>(
  { label: "ping of exactly 2 MiB", data: paddedPing(LIMITS.frameBytes), expect: { kind: "reply" } },
  {
    label: "ping of 2 MiB + 1",
    data: paddedPing(LIMITS.frameBytes + 1),
    expect: { kind: "close", code: CLOSE_CODES.messageTooBig, errorFirst: "too_large" },
  },
  {
    label: "frame of 4 MiB + 1 (over ws's hard cap: closed unread)",
    data: paddedPing(2 * LIMITS.frameBytes + 1),
    expect: { kind: "close", code: CLOSE_CODES.messageTooBig },
  },
);

/** One frame; big frames are rare so 10,000 of them fit a CI budget. */
const frameCase: fc.Arbitrary<FrameCase> = fc.oneof(
  { weight: 20, arbitrary: mutatedField },
  { weight: 10, arbitrary: notJson },
  { weight: 10, arbitrary: notObject },
  { weight: 10, arbitrary: noType },
  { weight: 10, arbitrary: unknownType },
  { weight: 15, arbitrary: valid },
  { weight: 5, arbitrary: binaryFrames },
  { weight: 3, arbitrary: empty },
  { weight: 2, arbitrary: invalidUtf8Text },
  { weight: 2, arbitrary: longString },
  { weight: 1, arbitrary: sized },
);

/** A before-hello sequence on a fresh connection, and how the server must end it. */
const beforeHello = fc.oneof(
  fc.tuple(frameCase, fc.boolean()).map(([junk, thenHello]) => ({
    label: `${junk.label} before hello`,
    frames: [junk, ...(thenHello ? [helloFrame(SECRET)] : [])],
    // A first frame that is not a valid hello is unauthorized, unless ws itself closes first.
    expect:
      junk.expect.kind === "close" && junk.expect.errorFirst === undefined
        ? { kind: "close", code: junk.expect.code }
        : junk.expect.kind === "close"
          ? { kind: "close", code: junk.expect.code, errorFirst: "too_large" }
          : { kind: "close", code: CLOSE_CODES.unauthorized, errorFirst: "unauthorized" },
  })),
  fc.string({ maxLength: 40 }).map((secret) => ({
    label: "hello with a wrong secret",
    frames: [helloFrame(`${secret}x`)],
    expect: { kind: "close", code: CLOSE_CODES.unauthorized, errorFirst: "unauthorized" },
  })),
  fc
    .oneof(fc.integer(), fc.constant(1e308))
    .filter((v) => v !== 1)
    .map((version) => ({
      label: `hello with protocol_version ${version}`,
      frames: [
        {
          label: "hello",
          data: JSON.stringify({ type: "hello", secret: SECRET, protocol_version: version }),
          expect: { kind: "reply" } as Expect,
        },
      ],
      expect: { kind: "close", code: CLOSE_CODES.versionMismatch, errorFirst: "version_mismatch" },
    })),
) as fc.Arbitrary<{ label: string; frames: FrameCase[]; expect: Extract<Expect, { kind: "close" }> }>;

function helloFrame(secret: string): FrameCase {
  return {
    label: "hello",
    data: JSON.stringify({ type: "hello", secret, protocol_version: 1 }),
    expect: { kind: "reply" },
  };
}

function sendCase(peer: Peer, c: FrameCase): void {
  peer.ws.send(c.data, { binary: c.binary ?? false });
}

let app: App;
let probe: Peer;
let probeConversation: string;
const probeLatencies: number[] = [];
const probeFailures: string[] = [];
let probing = true;
let probeLoop: Promise<void>;
const failures: string[] = [];
let frames = 0;
/** Frames per expected outcome, for the report. */
const tally: Record<string, number> = {};
let sourceCounter = 0;

/** A fresh loopback source address per before-hello connection (127.9.x.y). */
function nextSource(): string {
  sourceCounter++;
  return `127.9.${(sourceCounter >> 8) & 255}.${sourceCounter & 255 || 1}`;
}

beforeAll(async () => {
  app = await startApp();
  probe = await Peer.ready(app.wsUrl);
  probeConversation = await createConversation(probe, "probe");
  // The probe pings every 50 ms for the whole run, on its own connection.
  probeLoop = (async () => {
    while (probing) {
      const t0 = performance.now();
      try {
        const pong = await probe.request({ type: "ping" }, undefined, 10_000);
        if (pong.type !== "pong") probeFailures.push(JSON.stringify(pong));
        probeLatencies.push(performance.now() - t0);
      } catch (err) {
        probeFailures.push(String(err));
      }
      await sleep(50);
    }
  })();
});

afterAll(async () => {
  probing = false;
  await probeLoop;
  probe?.close();
  await app?.kill();
});

/** Run one case on `peer`; returns false when the connection ended (the caller opens a new one). */
async function runOne(peer: Peer, c: FrameCase): Promise<boolean> {
  frames++;
  const outcome =
    c.expect.kind === "error"
      ? c.expect.code
      : c.expect.kind === "close"
        ? `close ${c.expect.code}`
        : "answered";
  tally[outcome] = (tally[outcome] ?? 0) + 1;
  const before = peer.frames.length;
  const marker = `fz${frames}`;
  const closed = peer.closed.then(() => "closed" as const);
  if (c.label.startsWith("valid ")) {
    // Handlers answer asynchronously: wait for this request's own reply (or error) so it
    // cannot land in the next frame's window.
    const rid = `${marker}v`;
    const reply = peer
      .upcoming((m) => (m as { request_id?: string }).request_id === rid, 20_000)
      .catch((e: Error) => e);
    peer.send({ ...(JSON.parse(c.data as string) as object), request_id: rid });
    const got = await Promise.race([reply, closed]);
    if (got === "closed" || got instanceof Error) {
      failures.push(`${c.label}: no reply (${got instanceof Error ? got.message : peer.closeState?.code})`);
      return false;
    }
    return true;
  }
  sendCase(peer, c);
  if (c.expect.kind === "close") {
    const res = await Promise.race([peer.closed, sleep(10_000).then(() => undefined)]);
    const got = peer.frames.slice(before);
    if (!res) failures.push(`${c.label}: not closed`);
    else if (res.code !== c.expect.code)
      failures.push(`${c.label}: closed ${res.code}, want ${c.expect.code}`);
    const errors = got
      .filter((m) => m.type === "error")
      .map((m) => (m as { error: { code: string } }).error.code);
    const wantErrors = c.expect.errorFirst ? [c.expect.errorFirst] : [];
    if (JSON.stringify(errors) !== JSON.stringify(wantErrors))
      failures.push(`${c.label}: errors ${JSON.stringify(errors)}, want ${JSON.stringify(wantErrors)}`);
    return false;
  }
  peer.send({ type: "ping", request_id: marker });
  const end = await Promise.race([
    peer.upcoming((m) => m.type === "pong" && m.request_id === marker, 20_000).catch((e: Error) => e),
    closed,
  ]);
  if (end === "closed" || end instanceof Error) {
    failures.push(
      `${c.label}: connection lost (${end instanceof Error ? end.message : peer.closeState?.code})`,
    );
    return false;
  }
  const got = peer.frames.slice(before, peer.frames.indexOf(end as ServerMessage));
  if (c.expect.kind === "error") {
    const errors = got.filter((m) => m.type === "error") as Extract<ServerMessage, { type: "error" }>[];
    const e = errors[0];
    if (errors.length !== 1 || e?.error.code !== c.expect.code)
      failures.push(
        `${c.label}: got ${JSON.stringify(errors.map((x) => x.error.code))}, want [${c.expect.code}]`,
      );
    else if (e.request_id !== c.expect.requestId)
      failures.push(`${c.label}: request_id ${e.request_id}, want ${c.expect.requestId}`);
  }
  return true;
}

async function mainPeer(): Promise<Peer> {
  return Peer.ready(app.wsUrl, { localAddress: "127.0.0.2" });
}

describe("protocol fuzzing", () => {
  it(`survives ${BATCHES} batches of ${BATCH_SIZE} generated frames with the right error or close for each (seed ${SEED})`, async () => {
    const rssStart = rssMiB(app.pid);
    let peer = await mainPeer();
    let batches = 0;
    let sequences = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(frameCase, { minLength: BATCH_SIZE, maxLength: BATCH_SIZE }),
        beforeHello,
        async (batch, pre) => {
          const failed = failures.length;
          for (const c of batch) {
            if (!(await runOne(peer, c))) {
              failures.push(
                ...peer.invalid.map((v) => `invalid server frame: ${v.error}: ${v.raw.slice(0, 300)}`),
              );
              peer.close();
              peer = await mainPeer();
            }
          }
          // One before-hello sequence per batch, on its own fresh source address.
          const fresh = await Peer.open(app.wsUrl, { localAddress: nextSource() });
          for (const f of pre.frames) {
            if (fresh.closeState?.code === undefined) sendCase(fresh, f);
            frames++;
          }
          const res = await Promise.race([fresh.closed, sleep(10_000).then(() => undefined)]);
          if (res?.code !== pre.expect.code)
            failures.push(`${pre.label}: closed ${res?.code}, want ${pre.expect.code}`);
          const codes = fresh.frames.map((m) => (m.type === "error" ? m.error.code : m.type));
          if (pre.expect.errorFirst && codes[0] !== pre.expect.errorFirst)
            failures.push(`${pre.label}: got ${JSON.stringify(codes)}, want ${pre.expect.errorFirst}`);
          if (codes.includes("ready")) failures.push(`${pre.label}: authenticated after a bad first frame`);
          failures.push(
            ...fresh.invalid.map((v) => `invalid server frame: ${v.error}: ${v.raw.slice(0, 300)}`),
          );
          sequences++;

          // After every batch: the process is up and the probe still gets real answers.
          expect(app.child.exitCode).toBeNull();
          const list = await probe.request({ type: "conversation.list" }, undefined, 10_000);
          expect(list.type).toBe("conversation.snapshot");
          const open = await probe.request(
            { type: "conversation.open", conversation_id: probeConversation },
            undefined,
            10_000,
          );
          expect(open.type).toBe("conversation.history");
          batches++;
          // Frame-level failures are collected (with their batch) and reported once at the end,
          // rather than failing the property: fast-check would print the whole 10k-deep batch.
          for (let i = failed; i < failures.length; i++)
            failures[i] = `batch ${batches}: ${failures[i]!.slice(0, 300)}`;
        },
      ),
      { seed: SEED, numRuns: BATCHES, endOnFailure: true },
    );

    // A full chat still works for the probe at the end.
    const finished = probe.upcoming(
      (m) => m.type === "run.finished" && m.conversation_id === probeConversation,
    );
    const accepted = await probe.request({
      type: "chat.send",
      conversation_id: probeConversation,
      text: "still there?",
    });
    expect(accepted.type).toBe("run.accepted");
    expect(await finished).toMatchObject({ status: "completed" });

    peer.close();
    const rssEnd = rssMiB(app.pid);
    const p99 = percentile(probeLatencies, 99);
    console.log(
      `[fuzz] seed ${SEED}: ${frames} frames (${batches} batches of ${BATCH_SIZE} + ${sequences} before-hello sequences); ` +
        `RSS ${rssStart.toFixed(0)} -> ${rssEnd.toFixed(0)} MiB (bound ${RSS_BOUND_MIB}); ` +
        `probe: ${probeLatencies.length} pings, p99 ${p99.toFixed(1)} ms, ${probeFailures.length} failures; ` +
        `expected outcomes ${JSON.stringify(tally)}`,
    );
    expect(failures.slice(0, 30)).toEqual([]);
    expect(peer.invalid).toEqual([]);
    expect(probe.invalid).toEqual([]);
    expect(probeFailures).toEqual([]);
    expect(frames).toBeGreaterThanOrEqual(BATCHES * BATCH_SIZE);
    expect(rssEnd).toBeLessThan(RSS_BOUND_MIB);
    expect(app.child.exitCode).toBeNull();
  });
});
