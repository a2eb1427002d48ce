import { deviceIdOf } from "../auth/principal.js";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import { ScheduleError } from "../schedules/rules.js";
import { scheduleView } from "../schedules/view.js";
import { coreReply, type HandlerTable, requireConversation, type ServerContext } from "./context.js";

/**
 * Auto-approval lets YOLO answer a schedule's runs unattended: only the master secret may switch it
 * on. A device gets `bad_request` saying so, as for the devices extension's owner-only requests.
 */
function checkAutoApprove(req: { peer: Peer }, autoApprove: boolean | undefined): void {
  if (autoApprove === true && req.peer.principal?.kind !== "owner")
    throw new ProtocolError("bad_request", "only the owner (the master secret) may set auto_approve");
}

/** The owner approved an auto-approving schedule's prompt as it is: a device may not change it. */
function checkPromptChange(ctx: ServerContext, req: { peer: Peer }, id: string, prompt: unknown): void {
  if (prompt === undefined || req.peer.principal?.kind === "owner") return;
  if (checked(() => ctx.scheduler.get(id)).auto_approve)
    throw new ProtocolError(
      "bad_request",
      "only the owner (the master secret) may change the prompt of a schedule with auto_approve",
    );
}

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
 * update or delete is that same event, carrying its `request_id` ("broadcast"); a creation's reply is
 * `schedule.created` ("requester") and its broadcast skips the requester.
 */
export const scheduleHandlers: HandlerTable = {
  "schedule.list": (ctx, req) => {
    const { conversation_id } = req.msg;
    if (conversation_id !== undefined) requireConversation(ctx, conversation_id);
    return {
      rule: "requester",
      reply: { type: "schedule.snapshot", schedules: ctx.scheduler.list(conversation_id).map(scheduleView) },
    };
  },

  "schedule.create": (ctx, req) => {
    const { conversation_id, prompt, cron, at, timezone, name, auto_approve } = req.msg;
    checkAutoApprove(req, auto_approve);
    const row = checked(() =>
      ctx.scheduler.create(
        {
          conversationId: conversation_id,
          prompt,
          cron,
          at,
          timezone,
          name,
          deviceId: deviceIdOf(req.peer.principal),
          autoApprove: auto_approve === true,
        },
        { peer: req.peer },
      ),
    );
    return { rule: "requester", reply: { type: "schedule.created", schedule: scheduleView(row) } };
  },

  "schedule.update": (ctx, req) => {
    const { schedule_id, type: _type, request_id: _request, ...patch } = req.msg;
    checkAutoApprove(req, patch.auto_approve);
    checkPromptChange(ctx, req, schedule_id, patch.prompt);
    const answer = coreReply(req, "broadcast");
    checked(() => ctx.scheduler.update(schedule_id, patch, answer.origin));
    return answer;
  },

  "schedule.delete": (ctx, req) => {
    const answer = coreReply(req, "broadcast");
    checked(() => ctx.scheduler.delete(req.msg.schedule_id, answer.origin));
    return answer;
  },
};
