import { ProtocolError } from "../errors.js";
import { ScheduleError } from "../schedules/rules.js";
import { scheduleView } from "../schedules/view.js";
import { type HandlerTable, PUBLISHED_BY_CORE, requireConversation } from "./context.js";

/** Run a scheduler call; its refusals become the protocol errors they name. */
function checked<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    if (err instanceof ScheduleError) throw new ProtocolError(err.code, err.message);
    throw err;
  }
}

/**
 * schedule.list / create / update / delete (the `schedules` extension). Every change reaches the
 * other `schedules` connections as `schedule.changed`, published by the scheduler's change
 * listener (server.ts) with the requester as its origin: the requester's `schedule.changed` of an
 * update or delete is that same event, carrying its `request_id`; a creation's reply is
 * `schedule.created` and its broadcast skips the requester.
 */
export const scheduleHandlers: HandlerTable = {
  "schedule.list": (ctx, req) => {
    const { conversation_id } = req.msg;
    if (conversation_id !== undefined) requireConversation(ctx, conversation_id);
    return {
      reply: { type: "schedule.snapshot", schedules: ctx.scheduler.list(conversation_id).map(scheduleView) },
    };
  },

  "schedule.create": (ctx, req) => {
    const { conversation_id, prompt, cron, at, timezone, name } = req.msg;
    const row = checked(() =>
      ctx.scheduler.create(
        { conversationId: conversation_id, prompt, cron, at, timezone, name },
        { peer: req.peer },
      ),
    );
    return { reply: { type: "schedule.created", schedule: scheduleView(row) } };
  },

  "schedule.update": (ctx, req) => {
    const { schedule_id, type: _type, request_id, ...patch } = req.msg;
    checked(() => ctx.scheduler.update(schedule_id, patch, { peer: req.peer, requestId: request_id }));
    return PUBLISHED_BY_CORE;
  },

  "schedule.delete": (ctx, req) => {
    checked(() =>
      ctx.scheduler.delete(req.msg.schedule_id, { peer: req.peer, requestId: req.msg.request_id }),
    );
    return PUBLISHED_BY_CORE;
  },
};
