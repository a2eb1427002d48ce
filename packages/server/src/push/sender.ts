import { type ClientRequest, Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import webpush from "web-push";
import {
  checkPeer,
  type EndpointPolicy,
  EndpointRefused,
  guardedLookup,
  parseEndpoint,
  type Resolve,
  systemResolve,
} from "./address.js";
import type { VapidKeys } from "./vapid.js";

/** Where a push goes: a subscription's endpoint and the receiver's keys (RFC 8291). */
export interface PushTarget {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** RFC 8030 urgency. */
export type Urgency = "very-low" | "low" | "normal" | "high";

/** One push request: the plaintext payload and the RFC 8030 headers. */
export interface PushRequest {
  payload: string;
  /** Seconds the push service keeps the message for an unreachable receiver. */
  ttlSeconds: number;
  urgency: Urgency;
  /** Replaces an undelivered message with the same topic (≤ 32 base64url characters). */
  topic?: string;
}

/**
 * What became of one request. `retry`: a 5xx, a timeout or a network error (worth retrying later);
 * `rejected`: any other answer, redirects included (never followed), not worth retrying;
 * `refused`: the SSRF rule stopped it before anything was sent.
 */
export type SendOutcome =
  | { kind: "delivered"; status: number }
  | { kind: "gone"; status: number }
  | { kind: "too_large"; status: number }
  | { kind: "rate_limited"; status: number; retryAfterMs: number | undefined }
  | { kind: "retry"; status?: number; reason: string }
  | { kind: "rejected"; status: number }
  | { kind: "refused"; reason: string };

/** Options of {@link PushSender}. */
export interface PushSenderOptions {
  vapid: VapidKeys;
  /** VAPID `sub` claim: a `mailto:` or `https:` contact for the push service's operator. */
  subject: string;
  policy: EndpointPolicy;
  /** Per-request deadline, connection and answer included (default {@link PUSH_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Resolver used when connecting (tests inject one to play DNS rebinding). */
  resolve?: Resolve;
}

/**
 * Each push request is abandoned (and retried later) after this long, so a push service that never
 * answers cannot hold up the pushes queued behind it.
 */
export const PUSH_TIMEOUT_MS = 10_000;
/** Bytes of a push service's answer we read (and discard) at most. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Sends one Web Push request. `web-push` does the RFC 8291 `aes128gcm` encryption and the RFC 8292
 * VAPID header (`generateRequestDetails`); the request itself is ours so that redirects are never
 * followed, each request has a hard deadline, no proxy from the environment applies, and the SSRF
 * rule is enforced on the address actually connected to (a guarded `lookup` plus a check of the
 * socket's remote address). Connections are kept alive per origin.
 */
export class PushSender {
  readonly #options: PushSenderOptions;
  readonly #timeoutMs: number;
  readonly #https: HttpsAgent;
  readonly #http: HttpAgent;

  constructor(options: PushSenderOptions) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? PUSH_TIMEOUT_MS;
    const lookup = guardedLookup(options.policy, options.resolve ?? systemResolve);
    // Two sockets per origin at most: queues are per endpoint and one push service serves many.
    const agent = { keepAlive: true, maxSockets: 2, lookup } as const;
    this.#https = new HttpsAgent(agent);
    this.#http = new HttpAgent(agent);
  }

  /** Encrypt `request.payload` for `target` and POST it. Never throws; `signal` aborts the request. */
  async send(target: PushTarget, request: PushRequest, signal?: AbortSignal): Promise<SendOutcome> {
    let url: URL;
    let details: ReturnType<typeof webpush.generateRequestDetails>;
    try {
      url = parseEndpoint(target.endpoint, this.#options.policy);
      details = webpush.generateRequestDetails(target, request.payload, {
        vapidDetails: {
          subject: this.#options.subject,
          publicKey: this.#options.vapid.publicKey,
          privateKey: this.#options.vapid.privateKey,
        },
        contentEncoding: "aes128gcm",
        TTL: request.ttlSeconds,
        urgency: request.urgency,
        ...(request.topic ? { topic: request.topic } : {}),
      });
    } catch (err) {
      if (err instanceof EndpointRefused) return { kind: "refused", reason: err.message };
      // Keys that do not encrypt (checked at subscribe time, so only a damaged row gets here).
      return { kind: "rejected", status: 0 };
    }
    return this.#post(url, details.headers as Record<string, string | number>, details.body, signal);
  }

  /** Close idle keep-alive connections. */
  close(): void {
    this.#https.destroy();
    this.#http.destroy();
  }

  #post(
    url: URL,
    headers: Record<string, string | number>,
    body: Buffer | null,
    signal: AbortSignal | undefined,
  ): Promise<SendOutcome> {
    const request = url.protocol === "https:" ? httpsRequest : httpRequest;
    const agent = url.protocol === "https:" ? this.#https : this.#http;
    return new Promise<SendOutcome>((resolve) => {
      let settled = false;
      const settle = (outcome: SendOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        signal?.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      let req: ClientRequest;
      const deadline = setTimeout(() => {
        settle({ kind: "retry", reason: "timeout" });
        req.destroy();
      }, this.#timeoutMs);
      const onAbort = () => {
        settle({ kind: "retry", reason: "aborted" });
        req.destroy();
      };
      req = request(url, { method: "POST", headers, agent });
      req.on("socket", (socket) => checkPeer(socket, this.#options.policy));
      req.on("error", (err) => {
        settle(
          err instanceof EndpointRefused
            ? { kind: "refused", reason: err.message }
            : { kind: "retry", reason: (err as NodeJS.ErrnoException).code ?? "network error" },
        );
      });
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        // The answer's body means nothing to us; read a little so the connection can be reused.
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) res.destroy();
        });
        res.on("error", () => {});
        res.on("end", () => settle(classify(status, res.headers["retry-after"])));
        res.on("close", () => settle(classify(status, res.headers["retry-after"])));
      });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
      req.end(body ?? undefined);
    });
  }
}

function classify(status: number, retryAfter: string | undefined): SendOutcome {
  if (status >= 200 && status < 300) return { kind: "delivered", status };
  if (status === 404 || status === 410) return { kind: "gone", status };
  if (status === 413) return { kind: "too_large", status };
  if (status === 429) return { kind: "rate_limited", status, retryAfterMs: parseRetryAfter(retryAfter) };
  if (status >= 500) return { kind: "retry", status, reason: `HTTP ${status}` };
  return { kind: "rejected", status };
}

/** `Retry-After` as delay-seconds or an HTTP date (RFC 9110), in ms from now; undefined when absent or bad. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
