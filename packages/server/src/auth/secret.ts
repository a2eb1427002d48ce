import { createHash } from "node:crypto";

/** SHA-256 of a secret's UTF-8 bytes: the fixed-length form every secret is compared (and a device secret stored) in. */
export const secretDigest = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();
