import { createECDH } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadOrCreateVapidKeys, VAPID_FILE } from "../../src/push/vapid.js";
import { useTempDirs } from "../helpers.js";

const tempDir = useTempDirs();

describe("VAPID key pair", () => {
  it("is generated on first start, stored with mode 0600, and reused after a restart", () => {
    const dir = join(tempDir(), "data");
    const first = loadOrCreateVapidKeys(dir);
    const file = join(dir, VAPID_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // An uncompressed P-256 point (65 bytes, 0x04 first) and a 32-byte private key, base64url.
    const point = Buffer.from(first.publicKey, "base64url");
    expect(point.length).toBe(65);
    expect(point[0]).toBe(4);
    expect(first.publicKey).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(first.privateKey, "base64url").length).toBe(32);
    const ecdh = createECDH("prime256v1");
    ecdh.setPrivateKey(Buffer.from(first.privateKey, "base64url"));
    expect(ecdh.getPublicKey("base64url")).toBe(first.publicKey);
    expect(loadOrCreateVapidKeys(dir)).toEqual(first);
  });

  it("refuses a damaged or mismatched file instead of silently replacing it", () => {
    const dir = tempDir();
    const keys = loadOrCreateVapidKeys(dir);
    const file = join(dir, VAPID_FILE);
    writeFileSync(file, "{not json");
    expect(() => loadOrCreateVapidKeys(dir)).toThrow(/not a valid VAPID key pair/);
    const other = createECDH("prime256v1");
    other.generateKeys();
    writeFileSync(
      file,
      JSON.stringify({ publicKey: other.getPublicKey("base64url"), privateKey: keys.privateKey }),
    );
    expect(() => loadOrCreateVapidKeys(dir)).toThrow(/not a valid VAPID key pair/);
    // The error names the file, never a key.
    try {
      loadOrCreateVapidKeys(dir);
    } catch (err) {
      expect((err as Error).message).not.toContain(keys.privateKey);
    }
    expect(readFileSync(file, "utf8")).toContain(other.getPublicKey("base64url"));
  });
});
