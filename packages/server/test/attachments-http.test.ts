import { LIMITS, UploadResponse } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { pdfDocument, pngImage } from "../src/agent/simulator/files.js";
import { createConversation, RawClient, SECRET, startServer, useServerWithTwoClients } from "./helpers.js";
import { bytes, http, storeFiles, upload } from "./http.js";

const UNAVAILABLE = '{"error":{"code":"not_found","message":"Attachment unavailable"}}';

describe("POST /attachments and GET /attachments/{id}", () => {
  // Many deliberate wrong-secret requests here; the lockout has its own test below.
  const env = useServerWithTwoClients({ lockout: { maxFailures: 1000 } });
  let conv = "";
  const conversation = async () => {
    conv ||= await createConversation(env.a);
    return conv;
  };

  it("stores a body and answers 201 with a descriptor the protocol accepts; download returns the same bytes", async () => {
    const id = await conversation();
    const body = Buffer.from("# Notes\n\nhello from a test\n");
    const res = await upload(env.ts.url, id, "notes.md", body, "text/markdown");
    expect(res.status).toBe(201);
    const parsed = UploadResponse.parse(res.json);
    expect(parsed.attachment).toMatchObject({
      filename: "notes.md",
      mime_type: "text/markdown",
      size: body.length,
      kind: "document",
      inline_image: false,
      direction: "inbound",
      conversation_id: id,
      message_id: null,
      download_path: `/attachments/${parsed.attachment.attachment_id}`,
    });
    expect(parsed.attachment.attachment_id).toMatch(/^[0-9a-f]{32}$/);
    // 7 days by default.
    const created = Date.parse(parsed.attachment.created_at);
    expect(Date.parse(parsed.attachment.expires_at!)).toBe(created + 7 * 86_400_000);

    const got = await http(env.ts.url, "GET", parsed.attachment.download_path);
    expect(got.status).toBe(200);
    expect(got.body.equals(body)).toBe(true);
    expect(got.headers["content-type"]).toBe("text/markdown");
    expect(got.headers["content-length"]).toBe(String(body.length));
    expect(got.headers["x-content-type-options"]).toBe("nosniff");
    expect(got.headers["content-disposition"]).toBe(
      `attachment; filename="notes.md"; filename*=UTF-8''notes.md`,
    );
    expect(got.headers["accept-ranges"]).toBe("bytes");
  });

  it("accepts each auth form and refuses missing and wrong credentials on both routes", async () => {
    const id = await conversation();
    const q = `/attachments?conversation_id=${id}&filename=a.txt`;
    const forms: Record<string, string>[] = [
      { authorization: `Bearer ${SECRET}` },
      { authorization: `ApiKey ${SECRET}` },
      { authorization: `bearer ${SECRET}` },
      { "x-pheby-secret": SECRET },
    ];
    for (const headers of forms) {
      const up = await http(env.ts.url, "POST", q, { auth: false, headers, body: Buffer.from("x") });
      expect(up.status, JSON.stringify(Object.keys(headers))).toBe(201);
      const path = JSON.parse(up.body.toString()).attachment.download_path;
      const down = await http(env.ts.url, "GET", path, { auth: false, headers });
      expect(down.status).toBe(200);
      expect(down.body.toString()).toBe("x");
    }
    const ok = JSON.parse((await http(env.ts.url, "POST", q, { body: Buffer.from("y") })).body.toString())
      .attachment.download_path;
    const bad: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong-secret" },
      { authorization: `Basic ${SECRET}` },
      { authorization: SECRET },
      { "x-pheby-secret": "wrong" },
    ];
    for (const headers of bad) {
      const up = await http(env.ts.url, "POST", q, { auth: false, headers, body: Buffer.from("x") });
      expect(up.status).toBe(401);
      expect(JSON.parse(up.body.toString()).error.code).toBe("unauthorized");
      const down = await http(env.ts.url, "GET", ok, { auth: false, headers });
      expect(down.status).toBe(401);
      expect(down.body.toString()).not.toContain("Attachment");
      const nested = await http(env.ts.url, "GET", "/attachments/a/b", { auth: false, headers });
      expect(nested.status).toBe(401);
    }
    expect(storeFiles(env.ts.dataDir).tmp).toEqual([]);
  });

  it("400 for an unknown conversation, a bad filename or an empty body; nothing is stored", async () => {
    const id = await conversation();
    const before = storeFiles(env.ts.dataDir).blobs.length;
    const cases: [string, Buffer][] = [
      [`/attachments?conversation_id=${"0".repeat(32)}&filename=a.txt`, Buffer.from("x")],
      [`/attachments?filename=a.txt`, Buffer.from("x")],
      [`/attachments?conversation_id=${id}`, Buffer.from("x")],
      [`/attachments?conversation_id=${id}&filename=${encodeURIComponent("../..")}`, Buffer.from("x")],
      [`/attachments?conversation_id=${id}&filename=${encodeURIComponent("dir/\u0000\n")}`, Buffer.from("x")],
      [`/attachments?conversation_id=${id}&filename=a.txt`, Buffer.alloc(0)],
    ];
    for (const [path, body] of cases) {
      const res = await http(env.ts.url, "POST", path, { body });
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body.toString()).error.code).toBe("bad_request");
    }
    // Empty and chunked.
    const chunked = await http(env.ts.url, "POST", `/attachments?conversation_id=${id}&filename=a.txt`, {
      body: [][Symbol.iterator](),
    });
    expect(chunked.status).toBe(400);
    expect(storeFiles(env.ts.dataDir).blobs.length).toBe(before);
    expect(storeFiles(env.ts.dataDir).tmp).toEqual([]);
  });

  it("filename is display metadata: paths and control characters are stripped", async () => {
    const id = await conversation();
    const names: [string, string][] = [
      ["../../etc/passwd", "passwd"],
      ["C:\\Users\\me\\report.pdf", "report.pdf"],
      ["evil\r\nSet-Cookie: x.txt", "evilSet-Cookie: x.txt"],
      ["rtl\u202egnp.exe", "rtlgnp.exe"],
      ['quote"d ü.txt', 'quote"d ü.txt'],
    ];
    for (const [raw, clean] of names) {
      const res = await upload(env.ts.url, id, raw, Buffer.from("data"));
      expect(res.status).toBe(201);
      expect(res.json.attachment.filename).toBe(clean);
      const got = await http(env.ts.url, "GET", res.json.attachment.download_path);
      const disposition = String(got.headers["content-disposition"]);
      expect(disposition).toMatch(
        /^attachment; filename="[\x20-\x7e]*"; filename\*=UTF-8''[A-Za-z0-9%._~!-]+$/,
      );
      expect(decodeURIComponent(disposition.split("''")[1]!)).toBe(clean);
    }
  });

  it("kind and inline_image come from the content, not the declared type", async () => {
    const id = await conversation();
    const png = pngImage(8, 8);
    const cases: [string, Buffer, string, object][] = [
      ["p.png", png, "image/png", { kind: "image", inline_image: true, mime_type: "image/png" }],
      [
        "p.bin",
        png,
        "application/octet-stream",
        { kind: "image", inline_image: true, mime_type: "image/png" },
      ],
      ["fake.png", Buffer.from("not an image"), "image/png", { kind: "image", inline_image: false }],
      [
        "x.svg",
        Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
        "image/svg+xml",
        { kind: "image", inline_image: false, mime_type: "image/svg+xml" },
      ],
      [
        "doc.pdf",
        pdfDocument(["hi"]),
        "image/png",
        { kind: "document", inline_image: false, mime_type: "application/pdf" },
      ],
      [
        "a.jpg",
        Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]),
        "",
        { kind: "image", inline_image: true, mime_type: "image/jpeg" },
      ],
      ["a.gif", Buffer.from("GIF89a\x01\x00\x01\x00", "latin1"), "", { kind: "image", inline_image: true }],
      [
        "a.webp",
        Buffer.from("RIFF\x10\x00\x00\x00WEBPVP8 ", "latin1"),
        "",
        { kind: "image", inline_image: true },
      ],
      [
        "v.ogg",
        Buffer.from("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00OpusHead", "latin1"),
        "audio/ogg",
        { kind: "voice" },
      ],
      [
        "s.wav",
        Buffer.from("RIFF\x10\x00\x00\x00WAVEfmt ", "latin1"),
        "",
        { kind: "audio", mime_type: "audio/wav" },
      ],
      [
        "m.mp4",
        Buffer.from("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00", "latin1"),
        "",
        { kind: "video", mime_type: "video/mp4" },
      ],
      [
        "n.md",
        Buffer.from("# title"),
        "application/octet-stream",
        { kind: "document", mime_type: "text/markdown" },
      ],
      ["b.bin", Buffer.from([0, 1, 2, 3]), "", { kind: "document", mime_type: "application/octet-stream" }],
      [
        "h.html",
        Buffer.from("<h1>x</h1>"),
        "Text/HTML; charset=utf-8",
        { kind: "document", mime_type: "text/html" },
      ],
    ];
    for (const [name, body, type, expected] of cases) {
      const res = await upload(env.ts.url, id, name, body, type || "application/octet-stream");
      expect(res.status, name).toBe(201);
      expect(res.json.attachment, name).toMatchObject(expected);
    }
  });

  it("serves single byte ranges: 0-0, -1, N-, clamped end, 416 out of bounds, malformed ignored", async () => {
    const id = await conversation();
    const body = Buffer.from("0123456789");
    const { json } = await upload(env.ts.url, id, "digits.txt", body, "text/plain");
    const path = json.attachment.download_path;
    const get = (range: string) => http(env.ts.url, "GET", path, { headers: { range } });
    const cases: [string, number, string, string | undefined][] = [
      ["bytes=0-0", 206, "0", "bytes 0-0/10"],
      ["bytes=-1", 206, "9", "bytes 9-9/10"],
      ["bytes=7-", 206, "789", "bytes 7-9/10"],
      ["bytes=2-4", 206, "234", "bytes 2-4/10"],
      ["bytes=8-100", 206, "89", "bytes 8-9/10"],
      ["bytes=-100", 206, "0123456789", "bytes 0-9/10"],
      ["bytes=9-9", 206, "9", "bytes 9-9/10"],
    ];
    for (const [range, status, text, contentRange] of cases) {
      const res = await get(range);
      expect(res.status, range).toBe(status);
      expect(res.body.toString(), range).toBe(text);
      expect(res.headers["content-range"], range).toBe(contentRange);
      expect(res.headers["content-length"], range).toBe(String(text.length));
    }
    for (const range of ["bytes=10-", "bytes=10-20", "bytes=-0"]) {
      const res = await get(range);
      expect(res.status, range).toBe(416);
      expect(res.headers["content-range"], range).toBe("bytes */10");
      expect(res.body.length).toBe(0);
    }
    for (const range of ["bytes=abc", "bytes=5-2", "items=0-1", "bytes=-", "bytes=0-1,3-4", "bytes 0-1"]) {
      const res = await get(range);
      expect(res.status, range).toBe(200);
      expect(res.body.toString(), range).toBe("0123456789");
    }
  });

  it("unknown, malformed and traversal IDs get the exact minimal 404", async () => {
    const paths = [
      `/attachments/${"0".repeat(32)}`,
      "/attachments/xyz",
      `/attachments/${"A".repeat(32)}`,
      `/attachments/${"0".repeat(31)}`,
      "/attachments/..%2F..%2Fpheby.sqlite",
      "/attachments/blobs/x",
      "/attachments/",
    ];
    for (const path of paths) {
      const res = await http(env.ts.url, "GET", path);
      expect(res.status, path).toBe(404);
      expect(res.body.toString(), path).toBe(UNAVAILABLE);
    }
    // A literal dot segment is resolved by URL parsing before routing: it leaves /attachments and
    // gets the generic JSON 404, never a file.
    for (const path of [
      "/attachments/../pheby.sqlite",
      "/attachments/../attachments/blobs",
      "/attachments/%2e%2e/%2e%2e/etc/passwd",
    ]) {
      const res = await http(env.ts.url, "GET", path);
      expect(res.status, path).toBe(404);
      expect([UNAVAILABLE, '{"error":{"code":"not_found","message":"Not found"}}']).toContain(
        res.body.toString(),
      );
    }
  });

  it(`accepts exactly ${LIMITS.uploadBytes} bytes and refuses one more with 413, with and without Content-Length`, async () => {
    const id = await conversation();
    const q = `/attachments?conversation_id=${id}&filename=big.bin`;
    const max = LIMITS.uploadBytes;
    const before = storeFiles(env.ts.dataDir).blobs.length;
    const sized = (n: number) => ({ body: bytes(n), headers: { "content-length": n } });
    const okLength = await http(env.ts.url, "POST", q, sized(max));
    expect(okLength.status).toBe(201);
    expect(JSON.parse(okLength.body.toString()).attachment.size).toBe(max);
    const okChunked = await http(env.ts.url, "POST", q, { body: bytes(max) });
    expect(okChunked.status).toBe(201);

    const overLength = await http(env.ts.url, "POST", q, sized(max + 1));
    expect(overLength.status).toBe(413);
    expect(JSON.parse(overLength.body.toString()).error.code).toBe("too_large");
    const overChunked = await http(env.ts.url, "POST", q, { body: bytes(max + 1) });
    expect(overChunked.status).toBe(413);
    expect(JSON.parse(overChunked.body.toString()).error.code).toBe("too_large");
    // A client that keeps sending far beyond the limit is cut off too.
    const wayOver = await http(env.ts.url, "POST", q, { body: bytes(max * 2) });
    expect(wayOver.status).toBe(413);

    const files = storeFiles(env.ts.dataDir);
    expect(files.blobs.length).toBe(before + 2);
    expect(files.tmp).toEqual([]);
    // The server is fine afterwards.
    expect((await upload(env.ts.url, id, "after.txt", Buffer.from("ok"))).status).toBe(201);
  });

  it("the rest of the server is unaffected by HTTP traffic", async () => {
    const c = await RawClient.connect(env.ts.wsUrl);
    await c.ok({ type: "ping" }, "pong");
    c.close();
  });
});

describe("HTTP auth and the lockout", () => {
  it("wrong HTTP credentials count towards the per-address lockout shared with hello", async () => {
    const ts = await startServer({ lockout: { maxFailures: 3 } });
    try {
      const c = await RawClient.connect(ts.wsUrl);
      const id = await createConversation(c);
      const { json } = await upload(ts.url, id, "a.txt", Buffer.from("a"));
      const path = json.attachment.download_path;
      // Missing credentials are not a guess and do not count.
      for (let i = 0; i < 5; i++) expect((await http(ts.url, "GET", path, { auth: false })).status).toBe(401);
      for (let i = 0; i < 3; i++) {
        const res = await http(ts.url, "GET", path, { auth: false, headers: { "x-pheby-secret": "nope" } });
        expect(res.status).toBe(401);
      }
      const locked = await http(ts.url, "GET", path);
      expect(locked.status).toBe(429);
      // The wait is named (5 minutes by default), in the message and as Retry-After.
      expect(JSON.parse(locked.body.toString()).error).toEqual({
        code: "rate_limited",
        message: expect.stringMatching(/; retry after (300|299) s$/),
      });
      expect(locked.headers["retry-after"]).toMatch(/^(300|299)$/);
      // Locked: no more comparisons, so a further guess is 429 too, never 401.
      const guess = await http(ts.url, "GET", path, { auth: false, headers: { "x-pheby-secret": "nope" } });
      expect(guess.status).toBe(429);
      const ws = await RawClient.open(ts.wsUrl);
      expect((await ws.next("error")).error.code).toBe("rate_limited");
      c.close();
    } finally {
      await ts.cleanup();
    }
  });
});
