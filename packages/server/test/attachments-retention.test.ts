import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { DB_FILE } from "../src/store/store.js";
import {
  createConversation,
  RawClient,
  SECRET,
  send,
  spawnServerProcess,
  startServer,
  useTempDirs,
} from "./helpers.js";
import { bytes, http, storeFiles, upload } from "./http.js";

const DAY = 86_400_000;
const UNAVAILABLE = '{"error":{"code":"not_found","message":"Attachment unavailable"}}';
const T0 = Date.parse("2026-09-02T18:30:00.000Z");

const dir = useTempDirs();

/** A clock the test moves by hand. */
function manualClock(start = T0) {
  let now = start;
  return { now: () => now, set: (t: number) => (now = t) };
}

function attachmentRows(dataDir: string): { id: string }[] {
  const db = new Database(join(dataDir, DB_FILE));
  try {
    return db.prepare("SELECT id FROM attachments ORDER BY rowid").all() as { id: string }[];
  } finally {
    db.close();
  }
}

describe("retention", () => {
  it("expires after 7 days by default: 404, unlisted, unclaimable; the sweep deletes blob and row, and reruns cleanly", async () => {
    const dataDir = dir();
    const clock = manualClock();
    const ts = await startServer({ dataDir, clock });
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      const claimed = (await upload(ts.url, conv, "a.txt", Buffer.from("aaa"))).json.attachment;
      const spare = (await upload(ts.url, conv, "b.txt", Buffer.from("bbb"))).json.attachment;
      expect(claimed.created_at).toBe("2026-09-02T18:30:00.000Z");
      expect(claimed.expires_at).toBe("2026-09-09T18:30:00.000Z");
      await a.run(
        (
          await a.ok(
            { type: "chat.send", conversation_id: conv, text: "x", attachment_ids: [claimed.attachment_id] },
            "run.accepted",
          )
        ).run_id,
      );
      await a.run(await send(a, conv, "/sim file"));
      const open = () => a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
      expect((await open()).attachments).toHaveLength(2);

      clock.set(T0 + 7 * DAY - 1);
      expect((await http(ts.url, "GET", claimed.download_path)).status).toBe(200);
      expect((await open()).attachments).toHaveLength(2);
      expect(await ts.server.sweepAttachments()).toEqual({ expired: 0, temps: 0, orphans: 0 });

      clock.set(T0 + 7 * DAY);
      const gone = await http(ts.url, "GET", claimed.download_path);
      expect([gone.status, gone.body.toString()]).toEqual([404, UNAVAILABLE]);
      expect((await open()).attachments).toEqual([]);
      const late = await a.request(
        { type: "chat.send", conversation_id: conv, text: "late", attachment_ids: [spare.attachment_id] },
        "run.accepted",
      );
      expect(late.type === "error" && late.error.code).toBe("bad_request");

      expect(storeFiles(dataDir).blobs).toHaveLength(3);
      expect(await ts.server.sweepAttachments()).toEqual({ expired: 3, temps: 0, orphans: 0 });
      expect(storeFiles(dataDir).blobs).toEqual([]);
      expect(attachmentRows(dataDir)).toEqual([]);
      expect(await ts.server.sweepAttachments()).toEqual({ expired: 0, temps: 0, orphans: 0 });
      a.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("retention 0 keeps attachments forever with expires_at null", async () => {
    const clock = manualClock();
    const ts = await startServer({ dataDir: dir(), clock, attachmentRetentionDays: 0 });
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      const att = (await upload(ts.url, conv, "a.txt", Buffer.from("keep"))).json.attachment;
      expect(att.expires_at).toBeNull();
      clock.set(T0 + 10_000 * DAY);
      expect(await ts.server.sweepAttachments()).toEqual({ expired: 0, temps: 0, orphans: 0 });
      expect((await http(ts.url, "GET", att.download_path)).body.toString()).toBe("keep");
      a.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("a download in progress completes although the sweep deletes its blob", async () => {
    const dataDir = dir();
    const clock = manualClock();
    const ts = await startServer({ dataDir, clock, attachmentRetentionDays: 1 });
    try {
      const a = await RawClient.connect(ts.wsUrl);
      const conv = await createConversation(a);
      const size = 48 * 1024 * 1024;
      const up = await http(ts.url, "POST", `/attachments?conversation_id=${conv}&filename=big.bin`, {
        body: bytes(size, 0x62),
      });
      const att = JSON.parse(up.body.toString()).attachment;
      const { hostname, port } = new URL(ts.url);
      const received = await new Promise<number>((resolve, reject) => {
        const req = request(
          { host: hostname, port, path: att.download_path, headers: { authorization: `Bearer ${SECRET}` } },
          (res) => {
            let n = 0;
            res.once("data", async (first: Buffer) => {
              n += first.length;
              res.pause();
              clock.set(T0 + DAY);
              const swept = await ts.server.sweepAttachments();
              expect(swept.expired).toBe(1);
              expect(existsSync(join(dataDir, "attachments", "blobs", att.attachment_id))).toBe(false);
              res.on("data", (c: Buffer) => {
                n += c.length;
              });
              res.on("end", () => resolve(n));
              res.resume();
            });
          },
        );
        req.on("error", reject);
        req.end();
      });
      expect(received).toBe(size);
      expect((await http(ts.url, "GET", att.download_path)).status).toBe(404);
      a.close();
    } finally {
      await ts.cleanup();
    }
  });

  it("metadata survives a restart; the start sweep removes temp files, unindexed blobs and rows whose blob is gone", async () => {
    const dataDir = dir();
    const clock = manualClock();
    let ts = await startServer({ dataDir, clock });
    const a = await RawClient.connect(ts.wsUrl);
    const conv = await createConversation(a);
    const kept = (await upload(ts.url, conv, "kept.txt", Buffer.from("kept"))).json.attachment;
    const half = (await upload(ts.url, conv, "half.txt", Buffer.from("half"))).json.attachment;
    await a.run(
      (
        await a.ok(
          { type: "chat.send", conversation_id: conv, text: "x", attachment_ids: [kept.attachment_id] },
          "run.accepted",
        )
      ).run_id,
    );
    a.close();
    await ts.close();

    // What crashes leave behind: a temp file, a blob renamed but never indexed, and (an interrupted
    // sweep) an expired row whose blob is already unlinked. Files the store did not name are left alone.
    const root = join(dataDir, "attachments");
    writeFileSync(join(root, "tmp", `${"a".repeat(32)}.part`), "partial");
    writeFileSync(join(root, "blobs", "b".repeat(32)), "orphan");
    writeFileSync(join(root, "tmp", "not-ours.txt"), "leave me");
    rmSync(join(root, "blobs", half.attachment_id));

    clock.set(T0 + DAY);
    ts = await startServer({ dataDir, clock });
    try {
      expect(storeFiles(dataDir)).toEqual({ blobs: [kept.attachment_id], tmp: ["not-ours.txt"] });
      const c = await RawClient.connect(ts.wsUrl);
      const h = await c.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
      expect(h.attachments.map((x) => [x.attachment_id, x.expires_at])).toEqual([
        [kept.attachment_id, kept.expires_at],
      ]);
      expect((await http(ts.url, "GET", kept.download_path)).body.toString()).toBe("kept");
      const half404 = await http(ts.url, "GET", half.download_path);
      expect([half404.status, half404.body.toString()]).toEqual([404, UNAVAILABLE]);
      // The half-deleted row expires and is removed like any other.
      clock.set(T0 + 8 * DAY);
      expect((await ts.server.sweepAttachments()).expired).toBe(2);
      expect(attachmentRows(dataDir)).toEqual([]);
      c.close();
    } finally {
      await ts.cleanup();
    }
  });
});

describe("crash safety", () => {
  it("SIGKILL mid-upload: after a restart no partial attachment exists, the index is consistent, integrity_check is ok", async () => {
    const dataDir = dir();
    const { child, port } = await spawnServerProcess(dataDir);
    const url = `http://127.0.0.1:${port}`;
    const c = await RawClient.connect(`ws://127.0.0.1:${port}/ws`);
    const conv = await createConversation(c);
    const done = (await upload(url, conv, "done.txt", Buffer.from("complete"))).json.attachment;

    // Start a chunked upload, keep it open, and kill the server once bytes are on disk.
    const req = request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: `/attachments?conversation_id=${conv}&filename=partial.bin`,
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/octet-stream" },
    });
    req.on("error", () => {});
    const tmp = join(dataDir, "attachments", "tmp");
    const onDisk = () => readdirSync(tmp).reduce((n, f) => n + statSync(join(tmp, f)).size, 0);
    for (const chunk of bytes(4 * 1024 * 1024)) req.write(chunk);
    while (onDisk() === 0) await new Promise((r) => setTimeout(r, 20));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    req.destroy();
    c.close();
    expect(readdirSync(tmp)).toHaveLength(1);

    const ts = await startServer({ dataDir });
    try {
      const db = new Database(join(dataDir, DB_FILE));
      try {
        expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
        const rows = db.prepare("SELECT id, filename, size FROM attachments").all();
        expect(rows).toEqual([{ id: done.attachment_id, filename: "done.txt", size: 8 }]);
      } finally {
        db.close();
      }
      expect(storeFiles(dataDir)).toEqual({ blobs: [done.attachment_id], tmp: [] });
      expect((await http(ts.url, "GET", done.download_path)).body.toString()).toBe("complete");
      // Uploads work again.
      expect((await upload(ts.url, conv, "again.txt", Buffer.from("again"))).status).toBe(201);
    } finally {
      await ts.close();
    }
  });
});
