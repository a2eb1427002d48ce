// HTTP timeouts are idle timeouts, so a phone on a slow link can upload 64 MiB: a slow but steady transfer
// takes as long as it needs; one that moves nothing for httpIdleTimeoutMs is cut. A 1.5 s idle timeout stands
// in for the default 60 s, and a transfer of several seconds for one longer than Node's old 300 s request
// cap.
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  captureLogs,
  createConversation,
  RawClient,
  SECRET,
  startServer,
  type TestServer,
} from "./helpers.js";
import { storeFiles, upload } from "./http.js";

// 1.5 s: five times the upload trickle interval, so a noisy machine cannot make a steady upload look idle.
const IDLE_MS = 1_500;
const logs = captureLogs("debug");
let ts: TestServer;
let conversationId: string;
let client: RawClient;

beforeAll(async () => {
  ts = await startServer({ httpIdleTimeoutMs: IDLE_MS, logger: logs.logger });
  client = await RawClient.connect(ts.wsUrl);
  conversationId = await createConversation(client);
});
afterAll(async () => {
  client.close();
  await ts.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POST an upload whose body is written by `write`; resolves with the answer (or the socket's fate). */
function trickleUpload(
  declaredLength: number,
  write: (chunk: (b: Buffer) => void) => Promise<void>,
): Promise<{ status: number; body: string; ms: number }> {
  const started = Date.now();
  const q = new URLSearchParams({ conversation_id: conversationId, filename: "slow.bin" });
  return new Promise((resolve, reject) => {
    const req = request(
      `${ts.url}/attachments?${q}`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${SECRET}`, "content-length": declaredLength },
      },
      (res) => {
        let body = "";
        res.on("data", (d: Buffer) => {
          body += d.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, ms: Date.now() - started }));
      },
    );
    req.on("error", reject);
    void write((b) => req.write(b)).then(() => {
      if (!req.destroyed && req.writableLength === 0) req.end();
    });
  });
}

describe("uploads", () => {
  it("a slow but steady upload lasting several idle timeouts succeeds", async () => {
    const chunks = 20; // one every 300 ms: 6 s, four idle timeouts
    const chunk = Buffer.alloc(1000, 0x61);
    const res = await trickleUpload(chunks * chunk.length, async (write) => {
      for (let i = 0; i < chunks; i++) {
        write(chunk);
        await sleep(300);
      }
    });
    expect(res.status).toBe(201);
    expect(JSON.parse(res.body).attachment.size).toBe(chunks * chunk.length);
    expect(res.ms).toBeGreaterThan(3 * IDLE_MS);
  });

  it("a stalled upload is cut with 408 after the idle timeout, and no partial file is left", async () => {
    const before = storeFiles(ts.dataDir);
    const res = await trickleUpload(1_000_000, async (write) => {
      write(Buffer.alloc(10_000, 0x62));
      await sleep(300);
      write(Buffer.alloc(10_000, 0x62));
      // …and then nothing more.
    });
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual({
      error: { code: "bad_request", message: "No upload data for 1.5 s; the upload was abandoned" },
    });
    const after = storeFiles(ts.dataDir);
    expect(after.tmp).toEqual([]);
    expect(after.blobs).toEqual(before.blobs);
    // The server carries on.
    expect((await upload(ts.url, conversationId, "after.txt", Buffer.from("ok"))).status).toBe(201);
  });
});

describe("downloads", () => {
  const SIZE = 32 * 1024 * 1024; // more than loopback's socket buffers hold, so the server must wait
  let path: string;
  beforeAll(async () => {
    const { json } = await upload(ts.url, conversationId, "big.bin", randomBytes(SIZE));
    path = json.attachment.download_path;
  });

  /**
   * Download on a fresh connection, pausing after every `burst` bytes until `resume()` settles (at most
   * `pauses` times); resolves with what arrived.
   */
  function slowDownload(
    burst: number,
    resume: () => Promise<unknown>,
    pauses = Number.POSITIVE_INFINITY,
  ): Promise<{ bytes: number; complete: boolean }> {
    let paused = 0;
    return new Promise((resolve) => {
      const headers = { authorization: `Bearer ${SECRET}` };
      const req = request(`${ts.url}${path}`, { headers, agent: false }, (res) => {
        let bytes = 0;
        let sincePause = 0;
        res.on("data", (d: Buffer) => {
          bytes += d.length;
          sincePause += d.length;
          if (sincePause >= burst && paused < pauses) {
            paused++;
            sincePause = 0;
            res.pause();
            void resume().then(() => res.resume());
          }
        });
        res.on("end", () => resolve({ bytes, complete: res.complete }));
        res.on("error", () => resolve({ bytes, complete: false }));
        res.on("close", () => resolve({ bytes, complete: res.complete }));
      });
      req.on("error", () => resolve({ bytes: 0, complete: false }));
      req.end();
    });
  }

  /** True once the server has logged that a download was cut (polls its log); false after `ms`. */
  async function serverCutADownload(ms: number): Promise<boolean> {
    const cuts = () => logs.text().split("download ended early").length;
    const before = cuts();
    for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(50)) {
      if (cuts() > before) return true;
    }
    return false;
  }

  it("a slow reader that keeps reading gets the whole file, however long it takes", async () => {
    const started = Date.now();
    const res = await slowDownload(4 * 1024 * 1024, () => sleep(600)); // 8 pauses shorter than the idle timeout
    expect(res).toEqual({ bytes: SIZE, complete: true });
    expect(Date.now() - started).toBeGreaterThan(2 * IDLE_MS);
  });

  it("a reader that stops reading is cut after the idle timeout", async () => {
    // It reads again once the server has cut the download (a paused client would never see the close
    // otherwise: the FIN waits behind the unread data), finds what was in flight, then the cut. Waiting
    // for the server's own word, not a fixed pause, keeps a loaded machine from turning a late cut
    // into a complete download (CI saw that once with a 4.5 s pause).
    let cut = false;
    const res = await slowDownload(
      1024 * 1024,
      async () => {
        cut = await serverCutADownload(20_000);
      },
      1,
    );
    expect(cut).toBe(true);
    expect(res.complete).toBe(false);
    expect(res.bytes).toBeLessThan(SIZE);
  }, 60_000);
});
