import { createHash, timingSafeEqual } from "node:crypto";

/** SHA-256 of a secret's UTF-8 bytes: the fixed-length form every secret is compared (and a device secret stored) in. */
export const secretDigest = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/**
 * Constant-time secret check. Both sides are hashed first so inputs of any
 * length compare as equal-length digests: neither the content nor the length
 * of the expected secret leaks through timing.
 */
export function createSecretCheck(secret: string): (candidate: string) => boolean {
  const expected = secretDigest(secret);
  return (candidate) => timingSafeEqual(expected, secretDigest(candidate));
}
