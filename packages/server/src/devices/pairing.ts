import { randomBytes } from "node:crypto";
import { LIMITS } from "@pheby/protocol";
import { secretDigest } from "../auth/secret.js";
import type { Clock } from "../util/time.js";

/** How long a pairing code stays valid. */
export const PAIRING_CODE_TTL_MS = LIMITS.pairingCodeSeconds * 1000;
/** Bound on codes open at once; past it the oldest is dropped (an owner pairs one phone at a time). */
export const MAX_OPEN_CODES = 10;

/** A freshly opened pairing code. `code` is shown once (QR code, URI) and never kept in clear. */
export interface PairingCode {
  code: string;
  expiresAt: number;
  /** The device name the owner chose when opening the code, if any. */
  name?: string;
}

/**
 * Open pairing codes, in memory only. A code is 128 random bits (base64url, 22 characters),
 * single use, valid {@link PAIRING_CODE_TTL_MS}. Memory is the right place: a code lives minutes,
 * and a restart that forgets open codes only makes the owner open a new one (it can never make a
 * code valid). Codes are keyed by their SHA-256, so a lookup's timing depends on the digest of
 * the guess, not on how much of a real code it shares. A wrong guess stores nothing: memory is
 * bounded by {@link MAX_OPEN_CODES} however many guesses arrive (the lockout bounds the guesses).
 */
export class PairingCodes {
  /** Digest (hex) → expiry and name. Every code lives the same TTL, so insertion order is expiry order. */
  readonly #open = new Map<string, { expiresAt: number; name?: string }>();

  constructor(private readonly clock: Clock) {}

  /** Open a code. */
  open(name?: string): PairingCode {
    const now = this.clock.now();
    this.#prune(now);
    while (this.#open.size >= MAX_OPEN_CODES) this.#open.delete(this.#open.keys().next().value!);
    const code = randomBytes(16).toString("base64url");
    const expiresAt = now + PAIRING_CODE_TTL_MS;
    this.#open.set(key(code), name === undefined ? { expiresAt } : { expiresAt, name });
    return name === undefined ? { code, expiresAt } : { code, expiresAt, name };
  }

  /**
   * Use a code: its entry (with the owner's name, if any) when it is open and unexpired, which also
   * closes it; undefined for a wrong, used or expired code.
   */
  redeem(code: string): { name?: string } | undefined {
    const now = this.clock.now();
    this.#prune(now);
    const k = key(code);
    const entry = this.#open.get(k);
    if (!entry) return undefined;
    this.#open.delete(k);
    return entry.name === undefined ? {} : { name: entry.name };
  }

  /** Codes open right now (expired ones are not counted). */
  get size(): number {
    this.#prune(this.clock.now());
    return this.#open.size;
  }

  /** Drop expired codes from the front (insertion order is expiry order). */
  #prune(now: number): void {
    for (const [k, { expiresAt }] of this.#open) {
      if (expiresAt > now) break;
      this.#open.delete(k);
    }
  }
}

const key = (code: string) => secretDigest(code).toString("hex");
