import { type HandlerTable, PUBLISHED_BY_CORE, requireConversation } from "./context.js";

/** chat.send / run.cancel: thin wrappers over the run engine, which publishes their replies. */
export const chatHandlers: HandlerTable = {
  "chat.send": async (ctx, req) => {
    // A live turn must not interleave with a history replay of the same session.
    await ctx.history.idle(req.msg.conversation_id);
    const conv = requireConversation(ctx, req.msg.conversation_id);
    const ids = req.msg.attachment_ids ?? [];
    // The claim runs inside the transaction that records the user message, after the
    // run_active check: a rejected send claims nothing and leaves the IDs retryable.
    const claim = (messageId: string) => ctx.attachments.claim(conv.id, ids, messageId);
    ctx.runs.send(conv, req.msg.text, { peer: req.peer, requestId: req.msg.request_id }, claim);
    return PUBLISHED_BY_CORE;
  },

  "run.cancel": (ctx, req) => {
    requireConversation(ctx, req.msg.conversation_id);
    ctx.runs.cancel(req.msg.conversation_id, req.msg.run_id, req.msg.request_id);
    return PUBLISHED_BY_CORE;
  },
};
