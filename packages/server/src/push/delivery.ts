import type { Logger } from "pino";
import type { PushStore, PushSubscriptionRow } from "../store/push.js";
import type { Clock } from "../util/time.js";
import { encodePayload, type PushNotification } from "./payload.js";
import type { PushSender, SendOutcome } from "./sender.js";

/** Retry policy of a delivery (5xx, timeouts, network errors, 429). */
export interface RetryPolicy {
  /** Attempts per notification, the first included. */
  attempts: number;
  /** Delay before the first retry; doubled after each (with ±20 % jitter). */
  baseDelayMs: number;
  /** Longest single wait, `Retry-After` included. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 1_000, maxDelayMs: 5 * 60_000 };

/** Queued notifications per endpoint beyond which the oldest waiting one is dropped. */
export const MAX_QUEUED_PER_ENDPOINT = 32;

/** What a queue reports when a notification is done with (tests and `push.test` wait on it). */
export type DeliveryResult =
  | { outcome: "delivered"; status: number; withText: boolean }
  | { outcome: "removed"; status: number }
  | { outcome: "failed"; error: string; status?: number }
  | { outcome: "dropped"; reason: "expired" | "superseded" | "overflow" | "unsubscribed" | "closed" };

interface Job {
  notification: PushNotification;
  /** Previews on: send the texts (dropped for the rest of this job after a 413). */
  withText: boolean;
  /** When the push service should stop trying (ms since the epoch): the TTL counts from the event. */
  expiresAt: number;
  /** One attempt only (`push.test` reports the first answer, it does not retry). */
  once: boolean;
  done: (result: DeliveryResult) => void;
}

interface Queue {
  jobs: Job[];
  /** Aborts the request in flight or the wait before a retry. */
  controller: AbortController;
  drained: Promise<void>;
}

/** What {@link PushDelivery} needs. */
export interface PushDeliveryDeps {
  sender: PushSender;
  store: PushStore;
  clock: Clock;
  log: Logger;
  retry?: RetryPolicy;
}

/**
 * Delivery off the hot path: one queue per subscription (so per endpoint), each sending one
 * request at a time. Enqueuing never waits, so a hanging or slow endpoint delays only its own
 * queue — never a run, a WebSocket frame or another endpoint. Per outcome: 2xx records success;
 * 404/410 removes the subscription; 413 retries at once without text; 429 waits `Retry-After`;
 * 5xx, timeouts and network errors retry with exponential backoff, bounded in attempts and by the
 * notification's TTL; anything else (redirects included) fails at once. One log line per request,
 * with the endpoint's origin only.
 */
export class PushDelivery {
  readonly #queues = new Map<string, Queue>();
  readonly #retry: RetryPolicy;
  #closed = false;

  constructor(private readonly deps: PushDeliveryDeps) {
    this.#retry = deps.retry ?? DEFAULT_RETRY;
  }

  /**
   * Queue a notification for a subscription; resolves when it is done with (never rejects). A
   * queued notification with the same `Topic` is superseded: the push service would replace it
   * anyway, and an answered approval's `resolved` then never lets the stale question out.
   */
  enqueue(
    subscription: PushSubscriptionRow,
    notification: PushNotification,
    preview: boolean,
    options: { once?: boolean } = {},
  ): Promise<DeliveryResult> {
    return new Promise((done) => {
      if (this.#closed) return done({ outcome: "dropped", reason: "closed" });
      const job: Job = {
        notification,
        withText: preview,
        expiresAt: this.deps.clock.now() + notification.ttlSeconds * 1000,
        once: options.once ?? false,
        done,
      };
      let queue = this.#queues.get(subscription.id);
      if (!queue) {
        queue = { jobs: [], controller: new AbortController(), drained: Promise.resolve() };
        this.#queues.set(subscription.id, queue);
        const q = queue;
        q.jobs.push(job);
        // Start on a later turn of the event loop: encrypting and signing (about a millisecond)
        // must not run inside the caller, which is broadcasting the event to the sockets.
        q.drained = new Promise<void>((started) => setImmediate(started)).then(() =>
          this.#drain(subscription.id, q),
        );
        return;
      }
      // jobs[0] is the one being sent; only waiting ones are superseded or dropped.
      const waiting = queue.jobs.findIndex((j, i) => i > 0 && j.notification.topic === notification.topic);
      if (waiting > 0) queue.jobs.splice(waiting, 1)[0]!.done({ outcome: "dropped", reason: "superseded" });
      if (queue.jobs.length > MAX_QUEUED_PER_ENDPOINT) {
        queue.jobs.splice(1, 1)[0]!.done({ outcome: "dropped", reason: "overflow" });
      }
      queue.jobs.push(job);
    });
  }

  /** Resolves once every queue is empty (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.#queues.size > 0) await Promise.all([...this.#queues.values()].map((q) => q.drained));
  }

  /** Stop: abort requests in flight and waits, drop what is queued; resolves once every queue has stopped. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const queue of this.#queues.values()) queue.controller.abort();
    await this.idle();
  }

  async #drain(subscriptionId: string, queue: Queue): Promise<void> {
    try {
      while (queue.jobs.length > 0) {
        const job = queue.jobs[0]!;
        job.done(await this.#deliver(subscriptionId, job, queue.controller.signal));
        queue.jobs.shift();
        if (this.deps.store.get(subscriptionId) === undefined || this.#closed) {
          for (const rest of queue.jobs.splice(0)) {
            rest.done({ outcome: "dropped", reason: this.#closed ? "closed" : "unsubscribed" });
          }
        }
      }
    } finally {
      this.#queues.delete(subscriptionId);
    }
  }

  async #deliver(subscriptionId: string, job: Job, signal: AbortSignal): Promise<DeliveryResult> {
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return { outcome: "dropped", reason: "closed" };
      // Re-read each attempt: an unsubscribe stops it, a re-subscribe's new keys apply.
      const sub = this.deps.store.get(subscriptionId);
      if (!sub) return { outcome: "dropped", reason: "unsubscribed" };
      const remainingMs = job.expiresAt - this.deps.clock.now();
      if (remainingMs <= 0) return { outcome: "dropped", reason: "expired" };
      const started = performance.now();
      const outcome = await this.deps.sender.send(
        { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } },
        {
          payload: encodePayload(job.notification, job.withText),
          ttlSeconds: Math.ceil(remainingMs / 1000),
          urgency: job.notification.urgency,
          topic: job.notification.topic,
        },
        signal,
      );
      // Shutting down: the store may be closing, and the outcome no longer matters.
      if (signal.aborted) return { outcome: "dropped", reason: "closed" };
      this.#logSend(sub, job, attempt, outcome, performance.now() - started);
      const now = this.deps.clock.now();
      switch (outcome.kind) {
        case "delivered":
          this.deps.store.recordSuccess(sub.id, now);
          return { outcome: "delivered", status: outcome.status, withText: job.withText };
        case "gone":
          // The push service says the subscription no longer exists: forget it for good.
          this.deps.store.remove(sub.id);
          return { outcome: "removed", status: outcome.status };
        case "too_large":
          this.deps.store.recordError(sub.id, `HTTP ${outcome.status}`, now);
          if (!job.withText || job.once)
            return { outcome: "failed", error: `HTTP ${outcome.status}`, status: outcome.status };
          job.withText = false;
          continue; // at once, ids only: the text was the problem, not the service
        case "refused":
          this.deps.store.recordError(sub.id, "refused: the endpoint's address is not public", now);
          return { outcome: "failed", error: outcome.reason };
        case "rejected":
          this.deps.store.recordError(
            sub.id,
            outcome.status ? `HTTP ${outcome.status}` : "not encryptable",
            now,
          );
          return outcome.status
            ? { outcome: "failed", error: `HTTP ${outcome.status}`, status: outcome.status }
            : { outcome: "failed", error: "the keys do not encrypt" };
        case "rate_limited":
        case "retry": {
          const error = outcome.kind === "rate_limited" ? "HTTP 429" : outcome.reason;
          this.deps.store.recordError(sub.id, error, now);
          const status = outcome.status === undefined ? {} : { status: outcome.status };
          if (attempt >= this.#retry.attempts || job.once) return { outcome: "failed", error, ...status };
          const delay =
            outcome.kind === "rate_limited" && outcome.retryAfterMs !== undefined
              ? outcome.retryAfterMs
              : this.#backoff(attempt);
          if (delay > this.#retry.maxDelayMs || now + delay >= job.expiresAt) {
            return { outcome: "failed", error, ...status };
          }
          if (!(await wait(delay, signal))) return { outcome: "dropped", reason: "closed" };
        }
      }
    }
  }

  #backoff(attempt: number): number {
    const exact = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** (attempt - 1));
    return Math.round(exact * (0.8 + Math.random() * 0.4));
  }

  /** One line per request: the outcome and the endpoint's origin, never the endpoint (a capability) or keys. */
  #logSend(sub: PushSubscriptionRow, job: Job, attempt: number, outcome: SendOutcome, ms: number): void {
    const fields = {
      subscription: sub.id,
      origin: originOf(sub.endpoint),
      kind: job.notification.kind,
      attempt,
      outcome: outcome.kind,
      ...("status" in outcome && outcome.status !== undefined ? { status: outcome.status } : {}),
      ...("reason" in outcome ? { reason: outcome.reason } : {}),
      ms: Math.round(ms),
    };
    if (outcome.kind === "delivered") this.deps.log.info(fields, "push sent");
    else this.deps.log.warn(fields, "push not delivered");
  }
}

/** The origin of an endpoint (`https://push.example.net`), safe to log and to show. */
export function originOf(endpoint: string): string {
  try {
    return new URL(endpoint).origin;
  } catch {
    return "invalid";
  }
}

/** Wait `ms` unless `signal` aborts first; true when the wait completed. */
function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    timer.unref(); // a retry waiting never keeps the process alive
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
