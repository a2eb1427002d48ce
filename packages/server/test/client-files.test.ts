import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PhebyError } from "@pheby/client";
import { LIMITS } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pngImage } from "../src/agent/simulator/files.js";
import { phebyClient, startServer, type TestServer, tempDir } from "./helpers.js";
import { bytes } from "./http.js";

let ts: TestServer;
let scratch: string;
beforeAll(async () => {
  ts = await startServer();
  scratch = tempDir();
});
afterAll(async () => {
  await ts.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

describe("@pheby/client files against the real server", () => {
  it("uploads from a path, bytes, a Blob and a stream, with progress; downloads to bytes, a path and a stream", async () => {
    const client = await phebyClient(ts);
    const { conversation_id: conv } = await client.request({ type: "conversation.create" });
    const png = pngImage(32, 32);
    const path = join(scratch, "photo.png");
    writeFileSync(path, png);

    const progress: [number, number | undefined][] = [];
    const fromPath = await client.upload(conv, path, { onProgress: (n, t) => progress.push([n, t]) });
    expect(fromPath).toMatchObject({
      filename: "photo.png",
      size: png.length,
      kind: "image",
      inline_image: true,
    });
    expect(progress.at(-1)).toEqual([png.length, png.length]);

    const fromBytes = await client.upload(conv, new TextEncoder().encode("hello"), {
      filename: "hello.txt",
      contentType: "text/plain",
    });
    expect(fromBytes).toMatchObject({ filename: "hello.txt", mime_type: "text/plain", size: 5 });
    const fromBlob = await client.upload(conv, new Blob(["# md"], { type: "text/markdown" }), {
      filename: "n.md",
    });
    expect(fromBlob).toMatchObject({ mime_type: "text/markdown", size: 4 });
    const stream = new Blob([new Uint8Array(png)]).stream();
    const fromStream = await client.upload(conv, stream, { filename: "s.png" });
    expect(fromStream).toMatchObject({ size: png.length, inline_image: true });

    const got = await client.download(fromPath);
    expect(got).toMatchObject({
      status: 200,
      contentType: "image/png",
      filename: "photo.png",
      size: png.length,
    });
    expect(Buffer.from(got.bytes!).equals(png)).toBe(true);

    const to = join(scratch, "copy.png");
    const seen: number[] = [];
    const saved = await client.download(fromPath.attachment_id, { to, onProgress: (n) => seen.push(n) });
    expect(saved.size).toBe(png.length);
    expect(readFileSync(to).equals(png)).toBe(true);
    expect(seen.at(-1)).toBe(png.length);

    const chunks: Uint8Array[] = [];
    await client.download(fromBytes, { to: new WritableStream({ write: (c) => void chunks.push(c) }) });
    expect(Buffer.concat(chunks).toString()).toBe("hello");

    const part = await client.download(fromBytes, { range: "1-3" });
    expect(part.status).toBe(206);
    expect(Buffer.from(part.bytes!).toString()).toBe("ell");
    client.close();
  });

  it("surfaces the server's error codes: 404 not_found, 413 too_large, 400 bad_request", async () => {
    const client = await phebyClient(ts);
    const { conversation_id: conv } = await client.request({ type: "conversation.create" });
    const missing = await client.download("0".repeat(32)).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(PhebyError);
    expect(missing).toMatchObject({ code: "not_found", status: 404 });

    const big = join(scratch, "big.bin");
    writeFileSync(big, Buffer.concat([...bytes(LIMITS.uploadBytes + 1)]));
    const tooBig = await client.upload(conv, big).catch((e: unknown) => e);
    expect(tooBig).toMatchObject({ code: "too_large", status: 413 });
    rmSync(big);

    const empty = await client
      .upload(conv, new Uint8Array(0), { filename: "e.txt" })
      .catch((e: unknown) => e);
    expect(empty).toMatchObject({ code: "bad_request", status: 400 });
    const wrongConv = await client.upload("f".repeat(32), new Uint8Array(1)).catch((e: unknown) => e);
    expect(wrongConv).toMatchObject({ code: "bad_request", status: 400 });
    client.close();
  });
});
