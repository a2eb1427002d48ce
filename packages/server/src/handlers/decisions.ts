import { type HandlerTable, PUBLISHED_BY_CORE } from "./context.js";

/**
 * approval.respond / clarify.respond. The reply is the single `*.resolved`,
 * published to everyone with the responder's `request_id` (by {@link Decisions}).
 */
export const decisionHandlers: HandlerTable = {
  "approval.respond": (ctx, req) => {
    ctx.decisions.respondApproval(req.msg);
    return PUBLISHED_BY_CORE;
  },
  "clarify.respond": (ctx, req) => {
    ctx.decisions.respondClarify(req.msg);
    return PUBLISHED_BY_CORE;
  },
};
