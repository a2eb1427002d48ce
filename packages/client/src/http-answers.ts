import { type ApprovalChoice, httpBodySchemas } from "@pheby/protocol";
import { PhebyError } from "./errors.js";
import { type FileClientOptions, httpBase, httpError, send } from "./files.js";

/** Options of the answer routes: the server's URL and secret (as the client's), and `fetch`. */
export type HttpAnswerOptions = FileClientOptions;

/** What `POST /approvals/{approval_id}` answers: the fields of the `approval.resolved` it broadcast. */
export interface ApprovalAnswerResult {
  approval_id: string;
  conversation_id: string;
  choice: ApprovalChoice;
  /** Always true: the answer was applied. */
  accepted: true;
}

/** What `POST /clarify/{clarify_id}` answers: the fields of the `clarify.resolved` it broadcast. */
export interface ClarifyAnswerResult {
  clarify_id: string;
  conversation_id: string;
  /** Always true: the answer was delivered. */
  accepted: true;
}

/** POST a JSON answer to `/{route}/{id}` (the ID one path segment) and parse the 200 body. */
async function postAnswer<T>(
  options: HttpAnswerOptions,
  route: "approvals" | "clarify",
  id: string,
  body: object,
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } },
): Promise<T> {
  const response = await send(options, `${httpBase(options.url)}/${route}/${encodeURIComponent(id)}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${options.secret}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await httpError(response);
  const parsed = schema.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success)
    throw new PhebyError("invalid_frame", `POST /${route} answer does not match the protocol`);
  return parsed.data;
}

/**
 * Answer a pending approval over HTTP (`POST /approvals/{approval_id}`), without a WebSocket: what an
 * app does from a notification's action. It applies exactly as `approval.respond` would (the one
 * `approval.resolved` reaches every connection). `reason` is free text, for `deny`.
 *
 * Rejects with a {@link PhebyError} carrying the HTTP `status`: `approval_not_found` (404: unknown,
 * already answered or withdrawn), `unauthorized` (401), `bad_request` (400), `rate_limited` (429,
 * with `retryAfterMs`), or `connection_closed` when the server cannot be reached.
 */
export function answerApproval(
  options: HttpAnswerOptions,
  approvalId: string,
  choice: ApprovalChoice,
  reason?: string,
): Promise<ApprovalAnswerResult> {
  const body = reason === undefined ? { choice } : { choice, reason };
  return postAnswer(options, "approvals", approvalId, body, httpBodySchemas.ApprovalAnswerResponse);
}

/**
 * Answer a pending clarification over HTTP (`POST /clarify/{clarify_id}`) with one of its choices or
 * free text, as `clarify.respond` would. Rejects as {@link answerApproval} does
 * (`clarify_not_found` for an unknown, answered or withdrawn question).
 */
export function answerClarification(
  options: HttpAnswerOptions,
  clarifyId: string,
  response: string,
): Promise<ClarifyAnswerResult> {
  return postAnswer(options, "clarify", clarifyId, { response }, httpBodySchemas.ClarifyAnswerResponse);
}
