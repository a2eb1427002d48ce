import { deviceIdOf } from "../auth/principal.js";
import { eventOf } from "../outbox/outbox.js";
import { type HandlerTable, requireAuthorized, requireConversation } from "./context.js";

/**
 * modes.list / mode.set / commands.list (the `modes` extension). Listing answers from what the agent
 * last said for the conversation and never starts an agent; `mode.set` reaches an open session at once.
 */
export const modeHandlers: HandlerTable = {
  "modes.list": (ctx, req) => {
    const { conversation_id } = req.msg;
    requireConversation(ctx, conversation_id);
    return {
      rule: "requester",
      reply: { type: "modes.snapshot", conversation_id, ...ctx.modes.snapshot(conversation_id) },
    };
  },

  "mode.set": async (ctx, req) => {
    const { conversation_id, mode_id } = req.msg;
    const conv = requireConversation(ctx, conversation_id);
    const changed = await ctx.modes.set(conv, mode_id, deviceIdOf(req.peer.principal), () => {
      requireAuthorized(ctx, req.peer);
      requireConversation(ctx, conversation_id);
    });
    return { rule: "broadcast", event: eventOf(changed) };
  },

  "commands.list": (ctx, req) => {
    const { conversation_id } = req.msg;
    requireConversation(ctx, conversation_id);
    return {
      rule: "requester",
      reply: { type: "commands.snapshot", conversation_id, commands: ctx.modes.commands(conversation_id) },
    };
  },
};
