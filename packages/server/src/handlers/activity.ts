import { ProtocolError } from "../errors.js";
import { type HandlerTable, requireConversation } from "./context.js";

/**
 * `tool.get` (`activity`): the latest state of any recorded tool call of a conversation, with its
 * detail, so an older run's diff or output stays reachable. The reply is the requester's alone.
 */
export const activityHandlers: HandlerTable = {
  "tool.get": (ctx, req) => {
    const { conversation_id, tool_call_id } = req.msg;
    requireConversation(ctx, conversation_id);
    const state = ctx.runs.tool(conversation_id, tool_call_id);
    if (!state) throw new ProtocolError("not_found", "No such tool call in this conversation");
    return { rule: "requester", reply: { type: "tool.event", ...state } };
  },
};
