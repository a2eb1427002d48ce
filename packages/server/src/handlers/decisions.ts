import type { HandlerTable } from "./context.js";

/**
 * approval.respond / clarify.respond. The reply is the single `*.resolved`,
 * broadcast to everyone with the responder's `request_id` (by {@link Decisions}).
 */
export const decisionHandlers: HandlerTable = {
  "approval.respond": (ctx, req) => ctx.decisions.respondApproval(req.msg),
  "clarify.respond": (ctx, req) => ctx.decisions.respondClarify(req.msg),
};
