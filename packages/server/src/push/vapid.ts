import { createECDH } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import webpush from "web-push";
import { ensurePrivateDir, PRIVATE_FILE_MODE, restrictFile } from "../util/private-files.js";

/** The server's VAPID key pair (RFC 8292), base64url: the public key uncompressed P-256 (65 bytes), the private key 32 bytes. */
export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

/** File name of the key pair inside the data directory (beside the generated secret). */
export const VAPID_FILE = "vapid.json";

/**
 * The server's VAPID key pair: read from `<dataDir>/vapid.json`, or generated on first start and
 * written there with mode 0600. Push services bind a subscription to this public key, so it must
 * survive restarts: a file that exists but cannot be read as a valid pair is an error (regenerating
 * would silently invalidate every subscription), never replaced. The private key is never logged.
 */
export function loadOrCreateVapidKeys(dataDir: string): VapidKeys {
  ensurePrivateDir(dataDir);
  const file = join(dataDir, VAPID_FILE);
  restrictFile(file); // a pair written with a looser mode by an older version
  const stored = readKeys(file);
  if (stored) return stored;
  const keys = webpush.generateVAPIDKeys();
  try {
    // "wx" never overwrites a pair another process created meanwhile.
    writeFileSync(file, `${JSON.stringify(keys)}\n`, { mode: PRIVATE_FILE_MODE, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return readKeys(file) ?? invalid(file);
  }
  restrictFile(file);
  return keys;
}

function readKeys(file: string): VapidKeys | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return invalid(file);
  }
  const { publicKey, privateKey } = (parsed ?? {}) as Partial<VapidKeys>;
  if (typeof publicKey !== "string" || typeof privateKey !== "string") return invalid(file);
  // The public key must be the private key's: a mismatch would make every push fail VAPID checks.
  try {
    const ecdh = createECDH("prime256v1");
    ecdh.setPrivateKey(Buffer.from(privateKey, "base64url"));
    if (ecdh.getPublicKey("base64url") !== publicKey) return invalid(file);
  } catch {
    return invalid(file);
  }
  return { publicKey, privateKey };
}

function invalid(file: string): never {
  throw new Error(`${file} is not a valid VAPID key pair; restore it or remove it to generate a new one`);
}
