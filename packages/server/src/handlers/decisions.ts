import { coreReply, type HandlerTable } from "./context.js";

/**
 * approval.respond / clarify.respond. The reply is the single `*.resolved`, which {@link Decisions}
 * publishes to everyone, each copy with the responder's `request_id` ("broadcast_all").
 */
export const decisionHandlers: HandlerTable = {
  "approval.respond": (ctx, req) => {
    const answer = coreReply(req, "broadcast_all");
    ctx.decisions.respondApproval(req.msg, answer.origin);
    return answer;
  },
  "clarify.respond": (ctx, req) => {
    const answer = coreReply(req, "broadcast_all");
    ctx.decisions.respondClarify(req.msg, answer.origin);
    return answer;
  },
};
