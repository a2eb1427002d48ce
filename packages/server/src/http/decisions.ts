import type { HttpBindings } from "@hono/node-server";
import { type ClientMessage, decodeClientFrame, type ErrorCode, LIMITS } from "@pheby/protocol";
import type { Context, Hono } from "hono";
import { authenticateHttp, type HttpAuthDeps, httpError } from "../auth/http.js";
import type { Decisions } from "../decisions/decisions.js";
import { ProtocolError } from "../errors.js";

/** What the approval and clarify routes need. */
export interface DecisionRouteDeps extends HttpAuthDeps {
  decisions: Decisions;
}

type Env = { Bindings: HttpBindings };

/** The body of one answer, at most one WebSocket frame's worth (2 MiB); undefined when larger. */
async function readBody(c: Context<Env>): Promise<string | undefined> {
  const { incoming } = c.env;
  if (Number(incoming.headers["content-length"] ?? 0) > LIMITS.frameBytes) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of incoming.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > LIMITS.frameBytes) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Decode a body as the WebSocket request it stands for (`approval.respond` / `clarify.respond`
 * with the path's ID), so both paths validate exactly alike and errors name fields, never values.
 */
async function answerOf<T extends "approval.respond" | "clarify.respond">(
  c: Context<Env>,
  type: T,
  ids: Record<string, string>,
): Promise<Extract<ClientMessage, { type: T }> | Response> {
  const text = await readBody(c);
  if (text === undefined) {
    c.header("Connection", "close");
    return httpError(c, 413, "too_large", `body exceeds ${LIMITS.frameBytes} bytes`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return httpError(c, 400, "bad_request", "body is not JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return httpError(c, 400, "bad_request", "body must be a JSON object");
  }
  // The path names the question; a body's own `type`, IDs or request_id mean nothing here.
  const { request_id: _r, ...fields } = body as Record<string, unknown>;
  const decoded = decodeClientFrame(JSON.stringify({ ...fields, type, ...ids }), { features: [] });
  if (!decoded.ok) {
    const tooLarge = decoded.error.code === "too_large";
    return httpError(c, tooLarge ? 413 : 400, tooLarge ? "too_large" : "bad_request", decoded.error.message);
  }
  return decoded.message as Extract<ClientMessage, { type: T }>;
}

/**
 * `POST /approvals/{approval_id}` and `POST /clarify/{clarify_id}`: answer a question from a
 * notification, without a WebSocket. Same credentials and lockout as the attachment routes; then
 * the ID is checked before the body (an unknown, answered or withdrawn ID is 404 whatever the body
 * says); then the body (400, or 413 over 2 MiB). Success answers exactly as `approval.respond` /
 * `clarify.respond` would — the single `*.resolved` is broadcast, without `request_id` — and the
 * route returns that resolution's fields with the question's conversation.
 */
export function decisionRoutes(app: Hono<Env>, deps: DecisionRouteDeps): void {
  answerRoute(app, deps, {
    path: "/approvals/:id",
    type: "approval.respond",
    idField: "approval_id",
    notFound: ["approval_not_found", "Approval not found"],
    pending: (id) => deps.decisions.approval(id),
    answer: (msg, conversation_id) => {
      deps.decisions.respondApproval(msg);
      return { approval_id: msg.approval_id, conversation_id, choice: msg.choice, accepted: true };
    },
  });
  answerRoute(app, deps, {
    path: "/clarify/:id",
    type: "clarify.respond",
    idField: "clarify_id",
    notFound: ["clarify_not_found", "Clarification not found"],
    pending: (id) => deps.decisions.clarification(id),
    answer: (msg, conversation_id) => {
      deps.decisions.respondClarify(msg);
      return { clarify_id: msg.clarify_id, conversation_id, accepted: true };
    },
  });
}

/** One answer route: credentials, then the ID, then the body, then the answer. */
function answerRoute<T extends "approval.respond" | "clarify.respond">(
  app: Hono<Env>,
  deps: DecisionRouteDeps,
  route: {
    path: string;
    type: T;
    idField: string;
    notFound: [ErrorCode, string];
    pending(id: string): { conversation_id: string } | undefined;
    /** Apply the answer (throws a ProtocolError when the question went meanwhile); the 200 body. */
    answer(msg: Extract<ClientMessage, { type: T }>, conversationId: string): object;
  },
): void {
  const [code, message] = route.notFound;
  app.post(route.path, async (c) => {
    const denied = authenticateHttp(c, deps);
    if (denied) return denied;
    const id = c.req.param("id") ?? "";
    const pending = route.pending(id);
    if (!pending) return httpError(c, 404, code, message);
    const msg = await answerOf(c, route.type, { [route.idField]: id });
    if (msg instanceof Response) return msg;
    try {
      return c.json(route.answer(msg, pending.conversation_id));
    } catch (err) {
      // Answered or withdrawn while the body was read.
      if (err instanceof ProtocolError) return httpError(c, 404, code, message);
      throw err;
    }
  });
}
