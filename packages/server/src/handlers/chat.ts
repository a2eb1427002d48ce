import { type HandlerTable, requireConversation } from "./context.js";
import { ProtocolError } from "./errors.js";

/** chat.send / run.cancel: thin wrappers over the run engine. */
export const chatHandlers: HandlerTable = {
  "chat.send": async (ctx, req) => {
    // A live turn must not interleave with a history replay of the same session.
    await ctx.history.idle(req.msg.conversation_id);
    const conv = requireConversation(ctx, req.msg.conversation_id);
    if (req.msg.attachment_ids?.length) {
      // No upload can exist before attachments land (issue 5), so every ID is unknown.
      throw new ProtocolError("bad_request", "attachment_ids: unknown attachment");
    }
    ctx.runs.send(conv, req.msg.text, req.conn, req.msg.request_id);
  },

  "run.cancel": (ctx, req) => {
    requireConversation(ctx, req.msg.conversation_id);
    ctx.runs.cancel(req.msg.conversation_id, req.msg.run_id, req.msg.request_id);
  },
};
