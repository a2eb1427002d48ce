/**
 * The tokens of the agent processes that may call Pheby's tools, shared by both routes (the
 * relay's socket and the HTTP listener). A token is 32 random bytes, kept only as its SHA-256;
 * a presented token is compared against every grant's in constant time. Failed attempts count
 * towards a {@link Lockout} (the same rule as failed hellos on the phone's socket), per source:
 * the peer address over TCP, one key for the Unix socket.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Lockout } from "../auth/lockout.js";
import type { McpGrant } from "./tool-server.js";

/** A grant while its agent process lives: `revoked` aborts when the process is gone (its connections close). */
export interface LiveGrant extends McpGrant {
  readonly revoked: AbortSignal;
}

/** Why a presented token was refused, or whose it is. */
export type Authorization =
  | { ok: true; grant: LiveGrant }
  | { ok: false; reason: "locked"; remainingMs: number }
  | { ok: false; reason: "unauthorized" };

const digest = (token: string) => createHash("sha256").update(token).digest();

export class Grants {
  readonly #grants = new Map<LiveGrant, { digest: Buffer; controller: AbortController }>();

  constructor(private readonly lockout: Lockout) {}

  /** Register `grant` under a fresh token. */
  issue(grant: McpGrant): { token: string; revoke(): void } {
    const token = randomBytes(32).toString("hex");
    const controller = new AbortController();
    const live: LiveGrant = { ...grant, revoked: controller.signal };
    this.#grants.set(live, { digest: digest(token), controller });
    return { token, revoke: () => this.#revoke(live) };
  }

  /**
   * Whose `token` is, from `source` (see the module comment). A locked-out source is refused
   * whatever it presents; a missing token is refused without counting (nothing was guessed).
   */
  authorize(source: string, token: string | undefined): Authorization {
    const remainingMs = this.lockout.remainingMs(source);
    if (remainingMs > 0) return { ok: false, reason: "locked", remainingMs };
    if (token === undefined || token === "") return { ok: false, reason: "unauthorized" };
    const presented = digest(token);
    let found: LiveGrant | undefined;
    // No early exit: every grant is compared, so the time taken says nothing about which matched.
    for (const [grant, known] of this.#grants) {
      if (timingSafeEqual(presented, known.digest)) found ??= grant;
    }
    if (!found) {
      this.lockout.fail(source);
      return { ok: false, reason: "unauthorized" };
    }
    this.lockout.succeed(source);
    return { ok: true, grant: found };
  }

  /** Forget every grant (Pheby shuts down): their connections close. */
  revokeAll(): void {
    for (const grant of [...this.#grants.keys()]) this.#revoke(grant);
  }

  #revoke(grant: LiveGrant): void {
    this.#grants.get(grant)?.controller.abort();
    this.#grants.delete(grant);
  }
}
