/**
 * An upload that does not fit on the server's disk: 507 saying so (not a bare 500), nothing partial
 * left, and the server carries on. The data directory is a real 2 MiB tmpfs, so the store really
 * runs out of space; mounting one needs root (CAP_SYS_ADMIN), so elsewhere the test is skipped and
 * says why.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createConversation, RawClient, startServer, type TestServer } from "./helpers.js";
import { bytes, http, storeFiles, upload } from "./http.js";

const MOUNT_BYTES = 2 * 1024 * 1024;
const mountPoint = mkdtempSync(join(tmpdir(), "pheby-disk-full-"));
let skipped: string | null = null;
try {
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${MOUNT_BYTES},mode=0700`, "tmpfs", mountPoint], {
    stdio: "pipe",
  });
} catch (err) {
  const why = String((err as { stderr?: Buffer }).stderr ?? err).trim();
  skipped = `disk-full upload test skipped: cannot mount a ${MOUNT_BYTES}-byte tmpfs as the data dir (${why}); it needs root`;
  console.info(skipped);
}

afterAll(() => {
  if (!skipped) execFileSync("umount", [mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

const freeBytes = () => {
  const s = statfsSync(mountPoint);
  return s.bavail * s.bsize;
};

describe.skipIf(skipped !== null)("an upload that does not fit on the server's disk", () => {
  let ts: TestServer | undefined;
  afterAll(() => ts?.close());

  it("answers 507 saying the disk is full, leaves no partial file, and the server carries on", async () => {
    ts = await startServer({ dataDir: mountPoint });
    const client = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(client);
    const q = `/attachments?conversation_id=${id}&filename=big.bin`;
    const free = freeBytes();
    const tooBig = MOUNT_BYTES + 512 * 1024;
    const diskFull = {
      error: { code: "internal_error", message: "The server's disk is full; the file was not stored" },
    };
    for (const body of [
      { body: bytes(tooBig), headers: { "content-length": tooBig } },
      { body: bytes(tooBig) }, // chunked: no size known before the disk fills
    ]) {
      const res = await http(ts.url, "POST", q, body);
      expect(res.status).toBe(507);
      expect(JSON.parse(res.body.toString())).toEqual(diskFull);
      expect(storeFiles(ts.dataDir)).toEqual({ blobs: [], tmp: [] });
      expect(freeBytes()).toBeGreaterThanOrEqual(free); // the partial file's space is back
    }
    // Uploads that fit, chats and history still work.
    expect((await upload(ts.url, id, "small.txt", Buffer.from("fits"))).status).toBe(201);
    await client.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    client.close();
  });
});
