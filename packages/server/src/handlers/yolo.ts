import { deviceIdOf } from "../auth/principal.js";
import { eventOf } from "../outbox/outbox.js";
import { type HandlerTable, requireConversation } from "./context.js";

/** yolo.current / yolo.set: a persisted, conversation-scoped flag. */
export const yoloHandlers: HandlerTable = {
  "yolo.current": (ctx, req) => {
    const { conversation_id } = req.msg;
    requireConversation(ctx, conversation_id);
    const enabled = ctx.settings.yolo(conversation_id);
    return {
      rule: "requester",
      reply: { type: "yolo.snapshot", enabled, scope: "conversation", conversation_id },
    };
  },

  "yolo.set": (ctx, req) => {
    const { conversation_id, enabled } = req.msg;
    requireConversation(ctx, conversation_id);
    // Through the modes: YOLO on is YOLO's mode, off the chosen one (mode.changed to `modes`
    // connections, after yolo.changed).
    const then = ctx.modes.setYolo(conversation_id, enabled, deviceIdOf(req.peer.principal));
    const changed = { type: "yolo.changed", enabled, scope: "conversation", conversation_id } as const;
    return { rule: "requester", reply: changed, broadcast: eventOf(changed), then };
  },
};
