import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { serverLogger } from "../src/log.js";
import { captureLogs, createConversation, RawClient, SECRET, send, startServer } from "./helpers.js";
import { upload } from "./http.js";

const CHAT = "CHAT-CONTENT-MARKER-7f3a";
const WRONG = "WRONG-SECRET-MARKER-91bc";

async function session(logChatContent: boolean) {
  const log = captureLogs();
  const ts = await startServer({ logger: log.logger, logChatContent });
  try {
    const bad = await RawClient.open(ts.wsUrl, { headers: { Authorization: `Bearer ${SECRET}` } });
    bad.send({ type: "hello", secret: WRONG, protocol_version: 1 });
    await bad.closed;
    const c = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(c);
    await c.run(await send(c, id, `${CHAT} hello`));
    await c.run(await send(c, id, "/sim tools"));
    c.send("{broken");
    await c.next("error");
    c.close();
    await c.closed;
  } finally {
    await ts.cleanup();
  }
  return log.text();
}

describe("logging", () => {
  it("debug logs lifecycle and message types, never secrets or chat text", async () => {
    const out = await session(false);
    for (const expected of [
      "connection open",
      "authenticated",
      "frame in",
      '"type":"chat.send"',
      "frame out",
      "connection closed",
      "rejected: wrong secret",
    ]) {
      expect(out).toContain(expected);
    }
    expect(out).not.toContain(SECRET);
    expect(out).not.toContain(WRONG);
    expect(out).not.toContain(CHAT);
    expect(out).not.toContain("You said");
    expect(out).not.toContain("sk-simulated");
  });

  it("chat text reaches the logs only when logChatContent is on", async () => {
    const out = await session(true);
    expect(out).toContain(CHAT);
    expect(out).not.toContain(SECRET);
    expect(out).not.toContain(WRONG);
  });

  it("never logs a query string: a secret a client put in the URL stays out of the logs", async () => {
    // "download ended early" used to log the full URL, query string and any secret in it included.
    const TOKEN = "QUERY-TOKEN-MARKER-5d2e";
    const log = captureLogs();
    const ts = await startServer({ logger: log.logger });
    try {
      const c = await RawClient.connect(ts.wsUrl);
      const id = await createConversation(c);
      const { json } = await upload(ts.url, id, "big.bin", randomBytes(16 * 1024 * 1024));
      const path = `${json.attachment.download_path}?secret=${SECRET}&token=${TOKEN}`;
      // Read one chunk of the download, then go away.
      await new Promise<void>((resolve, reject) => {
        const req = request(`${ts.url}${path}`, { headers: { authorization: `Bearer ${SECRET}` } }, (res) => {
          res.once("data", () => {
            req.destroy();
            resolve();
          });
        });
        req.on("error", () => {});
        req.on("timeout", reject);
        req.end();
      });
      await expect.poll(() => log.text(), { timeout: 10_000 }).toContain("download ended early");
      c.close();
    } finally {
      await ts.cleanup();
    }
    const out = log.text();
    expect(out).not.toContain(SECRET);
    expect(out).not.toContain(TOKEN);
  });

  it("redacts secret-ish fields even if code logs them by mistake", () => {
    const log = captureLogs();
    const logger = serverLogger(log.logger, false);
    logger.info(
      {
        secret: "s1",
        req: { headers: { authorization: "Bearer s2", cookie: "s3" }, url: "/a?secret=s5" },
        text: "s4",
        url: "/b?token=s6",
      },
      "oops",
    );
    const out = log.text();
    for (const s of ["s1", "s2", "s3", "s4"]) expect(out).not.toContain(`"${s}"`);
    for (const s of ["s5", "s6"]) expect(out).not.toContain(s);
    expect(out).toContain("[REDACTED]");
  });
});
