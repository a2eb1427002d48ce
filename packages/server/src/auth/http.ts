import type { IncomingHttpHeaders } from "node:http";
import type { HttpBindings } from "@hono/node-server";
import type { ErrorCode } from "@pheby/protocol";
import type { Context } from "hono";
import type { Logger } from "pino";
import { clientAddress, type TrustedProxy } from "./address.js";
import { type Lockout, retryAfter, retryAfterSeconds } from "./lockout.js";
import { type Principal, principalLog } from "./principal.js";
import type { Transfers } from "./transfers.js";

/**
 * The secrets an HTTP request presents: `Authorization: Bearer <secret>`,
 * `Authorization: ApiKey <secret>` (scheme case-insensitive) and
 * `X-Pheby-Secret: <secret>`. Empty when it presents none; a request may present one only.
 */
export function presentedSecrets(headers: IncomingHttpHeaders): string[] {
  const found: string[] = [];
  const auth = headers.authorization;
  if (typeof auth === "string") {
    const match = /^(?:bearer|apikey)[ ]+(\S.*)$/i.exec(auth.trim());
    if (match) found.push(match[1]!);
  }
  const header = headers["x-pheby-secret"];
  if (typeof header === "string" && header !== "") found.push(header);
  return found;
}

/** What {@link authenticateHttp} needs. */
export interface HttpAuthDeps {
  /** Who the presented secret authenticates (the master secret or a device's, in constant time); undefined when none. */
  authenticate(presented: string): Principal | undefined;
  lockout: Lockout;
  /** Whose `X-Forwarded-For` names the client's address for the lockout. */
  trustedProxy: TrustedProxy;
  /** A device's requests are tracked here while they run, so revoking it cuts them. */
  transfers: Transfers;
  log: Logger;
}

type HttpContext = Context<{ Bindings: HttpBindings }>;

/** The JSON error body of every HTTP route: `{"error":{"code","message"}}`. */
export function httpError(
  c: HttpContext,
  status: 400 | 401 | 404 | 408 | 413 | 429 | 507,
  code: ErrorCode,
  message: string,
): Response {
  return c.json({ error: { code, message } }, status);
}

/**
 * Authenticate an HTTP request (the attachment routes, the approval and clarify routes) with the
 * master secret or a device secret. Missing credentials → 401. Wrong credentials → 401 and a failure
 * counted towards the same per-address lockout as failed hellos (the HTTP routes take the same
 * secrets, so they must not be an unthrottled guessing oracle). More than one credential → 401 and
 * one failure, none of them compared: each request is one guess. A locked-out address gets 429
 * `rate_limited` whatever it presents. A device's request is tracked until its response ends:
 * revoking the device destroys its socket, which ends a download and fails an upload (whose partial
 * file is removed). Undefined when the request may proceed.
 */
export function authenticateHttp(c: HttpContext, deps: HttpAuthDeps): Response | undefined {
  const { incoming, outgoing } = c.env;
  const addr = clientAddress(
    incoming.socket.remoteAddress,
    incoming.headers["x-forwarded-for"],
    deps.trustedProxy,
  );
  const lockedMs = deps.lockout.remainingMs(addr);
  if (lockedMs > 0) {
    c.header("Retry-After", String(retryAfterSeconds(lockedMs)));
    return httpError(
      c,
      429,
      "rate_limited",
      `Too many failed attempts from this address; ${retryAfter(lockedMs)}`,
    );
  }
  const presented = presentedSecrets(incoming.headers);
  if (presented.length === 0) return httpError(c, 401, "unauthorized", "Missing credentials");
  if (presented.length > 1) {
    const locked = deps.lockout.fail(addr);
    deps.log.warn(
      { addr, locked, route: c.req.routePath },
      "HTTP request rejected: more than one credential",
    );
    return httpError(c, 401, "unauthorized", "Present one credential: Authorization or X-Pheby-Secret");
  }
  const principal = deps.authenticate(presented[0]!);
  if (!principal) {
    const locked = deps.lockout.fail(addr);
    deps.log.warn({ addr, locked, route: c.req.routePath }, "HTTP request rejected: wrong secret");
    return httpError(c, 401, "unauthorized", "Invalid credentials");
  }
  deps.lockout.succeed(addr);
  if (principal.kind === "device") {
    const done = deps.transfers.track(principal.deviceId, () => {
      deps.log.info(
        { ...principalLog(principal), route: c.req.routePath },
        "HTTP transfer cut: device revoked",
      );
      incoming.socket.destroy();
    });
    outgoing.once("close", done);
  }
  return undefined;
}
