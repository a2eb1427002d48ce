import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { LIMITS, type ServerMessageOf } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import type { AgentBackend, TurnInput } from "../src/agent/port.js";
import { pngImage } from "../src/agent/simulator/files.js";
import { createSimulatorBackend } from "../src/index.js";
import {
  captureLogs,
  createConversation,
  NO_CAPABILITIES,
  RawClient,
  send,
  startServer,
  useServerWithTwoClients,
  useTempDirs,
} from "./helpers.js";
import { http, upload } from "./http.js";

/** The simulator, recording every turn's input (what the agent side received). */
function recordingSimulator(inputs: TurnInput[]): AgentBackend {
  const sim = createSimulatorBackend({ delayMs: 1, laterDelayMs: 20 });
  return {
    ...sim,
    prompt(input, sink, signal) {
      inputs.push(input);
      return sim.prompt(input, sink, signal);
    },
  };
}

const bad = (m: { type: string; error?: { code: string } }) => {
  expect(m.type).toBe("error");
  return m.error?.code;
};

describe("claims on chat.send", () => {
  const inputs: TurnInput[] = [];
  const env = useServerWithTwoClients({ agent: recordingSimulator(inputs) });
  const up = async (conv: string, name: string, body: Buffer | string, type = "application/octet-stream") => {
    const res = await upload(env.ts.url, conv, name, Buffer.from(body), type);
    expect(res.status).toBe(201);
    return res.json.attachment.attachment_id;
  };

  it("a send claims its uploads: attachment.added to everyone, the agent gets refs, history keeps the text", async () => {
    const { a, b } = env;
    const conv = await createConversation(a);
    const md = "# Plan\n\n- one\n- two\n";
    const png = pngImage(4, 4);
    const ids = [await up(conv, "plan.md", md, "text/markdown"), await up(conv, "dot.png", png, "image/png")];
    // Not broadcast, not listed before a send claims them.
    let h = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(h.attachments).toEqual([]);

    const accepted = await a.ok(
      { type: "chat.send", conversation_id: conv, text: "see attached", attachment_ids: ids },
      "run.accepted",
    );
    const frames = await b.run(accepted.run_id);
    const added = b.frames.filter(
      (m): m is ServerMessageOf<"attachment.added"> =>
        m.type === "attachment.added" && ids.includes(m.attachment.attachment_id),
    );
    expect(added.map((m) => m.attachment.attachment_id)).toEqual(ids);
    h = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    const userMessage = h.messages.find((m) => m.role === "user")!;
    expect(userMessage.text).toBe("see attached");
    for (const m of added) {
      expect(m.conversation_id).toBe(conv);
      expect(m.attachment).toMatchObject({ direction: "inbound", message_id: userMessage.message_id });
    }
    expect(h.attachments.map((x) => x.attachment_id)).toEqual(ids);
    expect(h.attachments[1]).toMatchObject({ kind: "image", inline_image: true });

    // The agent side received both: inline text for the markdown, a readable path for each.
    const input = inputs.at(-1)!;
    expect(input.text).toBe("see attached");
    expect(input.attachments.map((x) => [x.attachmentId, x.filename, x.size])).toEqual([
      [ids[0], "plan.md", Buffer.byteLength(md)],
      [ids[1], "dot.png", png.length],
    ]);
    expect(input.attachments[0]!.inlineText).toBe(md);
    expect(input.attachments[1]!.inlineText).toBeUndefined();
    expect(readFileSync(input.attachments[1]!.path).equals(png)).toBe(true);
    // …and its reply names each with its size.
    const complete = frames.find((m) => m.type === "message.complete") as ServerMessageOf<"message.complete">;
    expect(complete.text).toContain(
      `You attached 2 files: plan.md (${Buffer.byteLength(md)} bytes, text inlined), dot.png (${png.length} bytes).`,
    );
  });

  it(`text up to ${LIMITS.inlineTextBytes} bytes is inlined, one byte more is not`, async () => {
    const conv = await createConversation(env.a);
    const exact = await up(conv, "exact.txt", "x".repeat(LIMITS.inlineTextBytes), "text/plain");
    const over = await up(conv, "over.txt", "x".repeat(LIMITS.inlineTextBytes + 1), "text/plain");
    const latin1 = await up(conv, "latin1.txt", Buffer.from("caf\xe9", "latin1"), "text/plain");
    const run = await env.a.ok(
      { type: "chat.send", conversation_id: conv, text: "texts", attachment_ids: [exact, over, latin1] },
      "run.accepted",
    );
    await env.a.run(run.run_id);
    const [e, o, l] = inputs.at(-1)!.attachments;
    expect(e!.inlineText).toHaveLength(LIMITS.inlineTextBytes);
    expect(o!.inlineText).toBeUndefined();
    // Declared text but not UTF-8: the agent gets the path only.
    expect(l!.inlineText).toBeUndefined();
    expect(o!.path).toMatch(/[0-9a-f]{32}$/);
  });

  it("unknown, already-sent, cross-conversation and outbound IDs reject the send and claim nothing", async () => {
    const { a } = env;
    const conv = await createConversation(a);
    const other = await createConversation(a);
    const used = await up(conv, "used.txt", "u");
    await a.run(
      (
        await a.ok(
          { type: "chat.send", conversation_id: conv, text: "first", attachment_ids: [used] },
          "run.accepted",
        )
      ).run_id,
    );
    const fresh = await up(conv, "fresh.txt", "f");
    const foreign = await up(other, "foreign.txt", "x");
    const fileRun = await send(a, conv, "/sim file");
    await a.run(fileRun);
    const outbound = (
      await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history")
    ).attachments.find((x) => x.direction === "outbound")!.attachment_id;
    const before = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");

    for (const ids of [
      [fresh, "0".repeat(32)],
      [fresh, used],
      [fresh, foreign],
      [fresh, outbound],
    ]) {
      const res = await a.request(
        { type: "chat.send", conversation_id: conv, text: "again", attachment_ids: ids },
        "run.accepted",
      );
      expect(bad(res)).toBe("bad_request");
    }
    // Nothing was recorded or claimed: same history, and `fresh` is still claimable.
    const after = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(after.messages).toEqual(before.messages);
    expect(after.attachments).toEqual(before.attachments);
    const ok = await a.ok(
      { type: "chat.send", conversation_id: conv, text: "now", attachment_ids: [fresh] },
      "run.accepted",
    );
    await a.run(ok.run_id);
    // And `foreign` in its own conversation.
    const ok2 = await a.ok(
      { type: "chat.send", conversation_id: other, text: "here", attachment_ids: [foreign] },
      "run.accepted",
    );
    await a.run(ok2.run_id);
  });

  it("a send rejected with run_active leaves the IDs retryable", async () => {
    const { a } = env;
    const conv = await createConversation(a);
    const id = await up(conv, "later.txt", "l");
    const slow = await send(a, conv, "/sim slow");
    const res = await a.request(
      { type: "chat.send", conversation_id: conv, text: "x", attachment_ids: [id] },
      "run.accepted",
    );
    expect(bad(res)).toBe("run_active");
    await a.ok({ type: "run.cancel", conversation_id: conv, run_id: slow }, "run.finished");
    const ok = await a.ok(
      { type: "chat.send", conversation_id: conv, text: "retry", attachment_ids: [id] },
      "run.accepted",
    );
    await a.run(ok.run_id);
    expect(inputs.at(-1)!.attachments.map((x) => x.attachmentId)).toEqual([id]);
  });

  it("up to 10 distinct IDs: 10 accepted, 11 and duplicates rejected", async () => {
    const { a } = env;
    const conv = await createConversation(a);
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) ids.push(await up(conv, `f${i}.txt`, `file ${i}`));
    expect(
      bad(
        await a.request(
          { type: "chat.send", conversation_id: conv, text: "x", attachment_ids: ids },
          "run.accepted",
        ),
      ),
    ).toBe("bad_request");
    expect(
      bad(
        await a.request(
          { type: "chat.send", conversation_id: conv, text: "x", attachment_ids: [ids[0], ids[0]] },
          "run.accepted",
        ),
      ),
    ).toBe("bad_request");
    const ok = await a.ok(
      { type: "chat.send", conversation_id: conv, text: "ten", attachment_ids: ids.slice(0, 10) },
      "run.accepted",
    );
    await a.run(ok.run_id);
    expect(inputs.at(-1)!.attachments).toHaveLength(10);
    const ok2 = await a.ok(
      { type: "chat.send", conversation_id: conv, text: "one more", attachment_ids: [ids[10]] },
      "run.accepted",
    );
    await a.run(ok2.run_id);
  });
});

describe("agent deliverables", () => {
  const dir = useTempDirs();

  it("/sim file and /sim image (bytes) are stored and broadcast outbound with the run's draft message_id", async () => {
    const ts = await startServer();
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const b = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      const fileRun = await send(a, conv, "/sim file");
      await b.run(fileRun);
      const imageRun = await send(a, conv, "/sim image");
      await b.run(imageRun);
      const added = b.frames.filter(
        (m): m is ServerMessageOf<"attachment.added"> => m.type === "attachment.added",
      );
      expect(added.map((m) => m.attachment)).toMatchObject([
        {
          filename: "pheby-report.pdf",
          mime_type: "application/pdf",
          kind: "document",
          inline_image: false,
          direction: "outbound",
          message_id: `draft-${fileRun}`,
        },
        {
          filename: "pheby-image.png",
          mime_type: "image/png",
          kind: "image",
          inline_image: true,
          direction: "outbound",
          message_id: `draft-${imageRun}`,
        },
      ]);
      const pdf = await http(ts.url, "GET", added[0]!.attachment.download_path);
      expect(pdf.body.subarray(0, 5).toString()).toBe("%PDF-");
      expect(pdf.body.toString("latin1")).toContain("%%EOF");
      expect(pdf.body.length).toBe(added[0]!.attachment.size);
      const png = await http(ts.url, "GET", added[1]!.attachment.download_path);
      expect(png.headers["content-type"]).toBe("image/png");
      // A real PNG: signature, 64x64 IHDR, and IDAT that inflates to 64 rows of 1 + 64*3 bytes.
      expect(png.body.subarray(0, 8).equals(Buffer.from("\x89PNG\r\n\x1a\n", "latin1"))).toBe(true);
      expect([png.body.readUInt32BE(16), png.body.readUInt32BE(20)]).toEqual([64, 64]);
      const idatLength = png.body.readUInt32BE(33);
      expect(png.body.subarray(37, 41).toString()).toBe("IDAT");
      expect(inflateSync(png.body.subarray(41, 41 + idatLength)).length).toBe(64 * (1 + 64 * 3));
      const h = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
      expect(h.attachments.map((x) => x.attachment_id)).toEqual(added.map((m) => m.attachment.attachment_id));
      a.close();
      b.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("after the run, conversation.open places a deliverable on its final assistant message, not the draft", async () => {
    const ts = await startServer();
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      const runId = await send(a, conv, "/sim image");
      await a.run(runId);
      // Live, the attachment names the draft bubble the run is streaming into.
      const live = await a.next("attachment.added", (m) => m.conversation_id === conv);
      expect(live.attachment.message_id).toBe(`draft-${runId}`);
      const h = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
      const answer = h.messages.at(-1)!;
      expect(answer).toMatchObject({ role: "assistant", text: expect.stringContaining("pheby-image.png") });
      expect(h.attachments).toHaveLength(1);
      expect(h.attachments[0]).toMatchObject({
        attachment_id: live.attachment.attachment_id,
        message_id: answer.message_id,
      });
      expect(h.messages.map((m) => m.message_id)).toContain(h.attachments[0]!.message_id);
      a.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("a run that delivers a file but no text still records an assistant message to carry it", async () => {
    const agent: AgentBackend = {
      name: "files-only",
      capabilities: NO_CAPABILITIES,
      async start() {},
      async createSession(id) {
        return { sessionId: `s-${id}` };
      },
      async prompt(_input, sink) {
        await sink.file({
          source: "bytes",
          bytes: Buffer.from("plain"),
          filename: "a.txt",
          mimeType: "text/plain",
        });
        return { status: "completed" };
      },
      async close() {},
    };
    const ts = await startServer({ agent });
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      await a.run(await send(a, conv, "just the file"));
      const h = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
      expect(h.messages.map((m) => [m.role, m.text])).toEqual([
        ["user", "just the file"],
        ["assistant", ""],
      ]);
      expect(h.attachments.map((x) => x.message_id)).toEqual([h.messages[1]!.message_id]);
      a.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("a path inside the allowed roots is copied (the original untouched); outside, it is refused and logged", async () => {
    const allowed = dir();
    const outside = dir();
    const logs = captureLogs("warn");
    const inRoot = await startServer({
      allowedFileRoots: [allowed],
      agent: createSimulatorBackend({ delayMs: 1, workDir: allowed }),
    });
    const outRoot = await startServer({
      allowedFileRoots: [allowed],
      logger: logs.logger,
      agent: createSimulatorBackend({ delayMs: 1, workDir: outside }),
    });
    try {
      const a = await RawClient.connect(inRoot.wsUrl);
      const conv = await createConversation(a);
      const run = await send(a, conv, "/sim image");
      await a.run(run);
      const added = a.frames.find(
        (m) => m.type === "attachment.added",
      ) as ServerMessageOf<"attachment.added">;
      expect(added.attachment).toMatchObject({
        filename: "pheby-image.png",
        inline_image: true,
        message_id: `draft-${run}`,
      });
      expect(existsSync(join(allowed, "pheby-image.png"))).toBe(true);
      const got = await http(inRoot.url, "GET", added.attachment.download_path);
      expect(got.body.equals(readFileSync(join(allowed, "pheby-image.png")))).toBe(true);
      a.close();

      const c = await RawClient.connect(outRoot.wsUrl);
      const conv2 = await createConversation(c);
      const run2 = await send(c, conv2, "/sim file");
      const frames = await c.run(run2);
      expect(frames.at(-1)).toMatchObject({ type: "run.finished", status: "completed" });
      expect(c.frames.some((m) => m.type === "attachment.added")).toBe(false);
      expect(logs.text()).toContain("produced file refused");
      expect(existsSync(join(outside, "pheby-report.pdf"))).toBe(true);
      const h = await c.ok({ type: "conversation.open", conversation_id: conv2 }, "conversation.history");
      expect(h.attachments).toEqual([]);
      c.close();
    } finally {
      await inRoot.cleanup();
      await outRoot.cleanup();
    }
  });

  it("symlinks out of a root, dot segments, directories and missing files are refused", async () => {
    const root = dir();
    const outside = dir();
    writeFileSync(join(outside, "secret.txt"), "do not copy");
    writeFileSync(join(root, "ok.txt"), "fine");
    symlinkSync(join(outside, "secret.txt"), join(root, "link.txt"));
    symlinkSync(outside, join(root, "linkdir"));
    mkdirSync(join(root, "sub"));
    const linkedRoot = join(dir(), "root-link");
    symlinkSync(root, linkedRoot);
    const paths = [
      join(root, "link.txt"),
      join(root, "linkdir", "secret.txt"),
      `${root}/../${outside.split("/").pop()}/secret.txt`,
      join(root, "sub"),
      join(root, "missing.txt"),
      "relative.txt",
      "",
      join(root, "ok.txt"),
    ];
    const backend: AgentBackend = {
      ...createSimulatorBackend(),
      async prompt(_input, sink) {
        for (const path of paths) await sink.file({ source: "path", path });
        sink.text("delivered");
        return { status: "completed" };
      },
    };
    // The configured root is itself a symlink: containment is checked on real paths.
    const ts = await startServer({ allowedFileRoots: [linkedRoot], agent: backend });
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      await a.run(await send(a, conv, "go"));
      const added = a.frames.filter(
        (m): m is ServerMessageOf<"attachment.added"> => m.type === "attachment.added",
      );
      expect(added.map((m) => m.attachment.filename)).toEqual(["ok.txt"]);
      expect((await http(ts.url, "GET", added[0]!.attachment.download_path)).body.toString()).toBe("fine");
      a.close();
    } finally {
      await ts.cleanup();
    }
  });
});
