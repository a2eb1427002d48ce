import { createHash, timingSafeEqual } from "node:crypto";

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/**
 * Constant-time secret check. Both sides are hashed first so inputs of any
 * length compare as equal-length digests: neither the content nor the length
 * of the expected secret leaks through timing.
 */
export function createSecretCheck(secret: string): (candidate: string) => boolean {
  const expected = digest(secret);
  return (candidate) => timingSafeEqual(expected, digest(candidate));
}
