import type { IncomingHttpHeaders } from "node:http";
import type { HttpBindings } from "@hono/node-server";
import type { ErrorCode } from "@pheby/protocol";
import type { Context } from "hono";
import type { Logger } from "pino";
import { clientAddress } from "./address.js";
import type { Lockout } from "./lockout.js";

/**
 * The secrets an HTTP request presents: `Authorization: Bearer <secret>`,
 * `Authorization: ApiKey <secret>` (scheme case-insensitive) and
 * `X-Pheby-Secret: <secret>`. Empty when it presents none.
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
  checkSecret(candidate: string): boolean;
  lockout: Lockout;
  log: Logger;
}

type HttpContext = Context<{ Bindings: HttpBindings }>;

/** The JSON error body of every HTTP route: `{"error":{"code","message"}}`. */
export function httpError(
  c: HttpContext,
  status: 400 | 401 | 404 | 408 | 413 | 429,
  code: ErrorCode,
  message: string,
): Response {
  return c.json({ error: { code, message } }, status);
}

/**
 * Authenticate an HTTP request (the attachment routes, the approval and clarify routes). Missing
 * credentials → 401. Wrong credentials → 401 and a failure counted towards the same per-address
 * lockout as failed hellos (the routes take the same secret, so they must not be an unthrottled
 * guessing oracle). A locked-out address gets 429 `rate_limited` whatever it presents. Undefined
 * when the request may proceed.
 */
export function authenticateHttp(c: HttpContext, deps: HttpAuthDeps): Response | undefined {
  const { incoming } = c.env;
  const addr = clientAddress(incoming.socket.remoteAddress, incoming.headers["x-forwarded-for"]);
  if (deps.lockout.isLocked(addr)) {
    return httpError(c, 429, "rate_limited", "Too many failed attempts from this address; try again later");
  }
  const presented = presentedSecrets(incoming.headers);
  if (presented.length === 0) return httpError(c, 401, "unauthorized", "Missing credentials");
  // Check every candidate (no early exit) so timing does not tell which header matched.
  const ok = presented.map((s) => deps.checkSecret(s)).includes(true);
  if (!ok) {
    const locked = deps.lockout.fail(addr);
    deps.log.warn({ addr, locked, route: c.req.routePath }, "HTTP request rejected: wrong secret");
    return httpError(c, 401, "unauthorized", "Invalid credentials");
  }
  deps.lockout.succeed(addr);
  return undefined;
}
