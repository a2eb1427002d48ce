import { type HandlerTable, requireConversation } from "./context.js";

/**
 * The `changes` extension: `changes.list` → `changes.snapshot` and `changes.diff` → `changes.file`,
 * each the requester's alone. Files are named by the IDs the snapshot handed out, never by a path.
 */
export const changesHandlers: HandlerTable = {
  "changes.list": async (ctx, req) => {
    const { conversation_id } = req.msg;
    requireConversation(ctx, conversation_id);
    const body = await ctx.changes.snapshot(conversation_id);
    return { rule: "requester", reply: { type: "changes.snapshot", conversation_id, ...body } };
  },

  "changes.diff": async (ctx, req) => {
    const { conversation_id, file_id } = req.msg;
    requireConversation(ctx, conversation_id);
    const body = await ctx.changes.file(conversation_id, file_id);
    return { rule: "requester", reply: { type: "changes.file", conversation_id, ...body } };
  },
};
