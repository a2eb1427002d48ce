import { ERROR_CODES, type ErrorCode, type ServerMessage } from "@pheby/protocol";
import type { SentKey, SentOutcome, SentRequests } from "../store/sent-requests.js";

/**
 * Refusals that say "not now", not "never": a retry of the same request may
 * well succeed, so they are never remembered. `unauthorized` is about the
 * requester (a device revoked while its request waited), not the request.
 */
export const TRANSIENT_ERRORS: ReadonlySet<ErrorCode> = new Set([
  "run_active",
  "rate_limited",
  "internal_error",
  "unauthorized",
]);

/**
 * Requests made idempotent by their `client_message_id`: the work runs once
 * per key, and a repeat (a retry after a lost reply) gets the first outcome
 * instead: a success, or a permanent error. A transient error is not
 * remembered, so the retry is tried afresh. A repeat that arrives while the
 * first is still being handled (e.g. `conversation.create` waiting for the
 * agent) waits for it rather than doing the work a second time.
 */
export class IdempotentRequests {
  readonly #inFlight = new Map<string, Promise<unknown>>();

  constructor(private readonly sent: SentRequests) {}

  /**
   * Settle the request `key` of `principal` (who it is remembered for: `"owner"` or a device's
   * id): its remembered outcome, or the outcome of
   * `work` now. `work` performs the request (its broadcasts included) and
   * returns the reply to remember; it throws an error carrying a protocol
   * `code` to refuse. Transient refusals and errors without such a code
   * (internal faults) are rethrown unremembered.
   */
  async once(
    key: SentKey,
    principal: string,
    work: () => ServerMessage | Promise<ServerMessage>,
  ): Promise<SentOutcome> {
    const id = `${key.kind}\u0000${key.scope}\u0000${key.clientMessageId}`;
    for (;;) {
      const remembered = this.sent.recall(key);
      if (remembered) return remembered;
      const running = this.#inFlight.get(id);
      if (running === undefined) break;
      // Whatever the first try ends with, look again: it is remembered now, or this one runs.
      await running.catch(() => undefined);
    }
    const attempt = this.#settle(key, principal, work);
    this.#inFlight.set(id, attempt);
    try {
      return await attempt;
    } finally {
      this.#inFlight.delete(id);
    }
  }

  async #settle(
    key: SentKey,
    principal: string,
    work: () => ServerMessage | Promise<ServerMessage>,
  ): Promise<SentOutcome> {
    let outcome: SentOutcome;
    try {
      outcome = { reply: await work() };
    } catch (err) {
      const code = permanentCode(err);
      if (code === undefined) throw err;
      outcome = { error: { code, message: (err as Error).message } };
    }
    this.sent.remember(key, outcome, principal);
    return outcome;
  }
}

/** The protocol error code of a refusal worth remembering, else undefined. */
function permanentCode(err: unknown): ErrorCode | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !(ERROR_CODES as readonly string[]).includes(code)) return undefined;
  return TRANSIENT_ERRORS.has(code as ErrorCode) ? undefined : (code as ErrorCode);
}
