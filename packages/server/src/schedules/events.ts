/**
 * How a schedule's changes reach the connections: every change is a `schedule.changed` to the
 * `schedules` connections. The request that made it gets that event as its reply (its copy carries
 * the `request_id`), except a creation, whose reply is `schedule.created`: the creator then gets no
 * `schedule.changed` at all.
 */
import type { Origin, Outbox } from "../outbox/outbox.js";
import type { ScheduleChangeEvent } from "./scheduler.js";
import { scheduleView } from "./view.js";

/** The scheduler's `changed` hook that publishes each change to `outbox`. */
export function publishScheduleChanges(outbox: Outbox): (change: ScheduleChangeEvent) => void {
  return ({ schedule, deleted, created, origin }) => {
    // The scheduler passes through what the request's handler gave it: the request's origin.
    const from = origin as Origin | undefined;
    outbox.publish({
      message: { type: "schedule.changed", schedule: scheduleView(schedule), deleted },
      conversationId: null,
      ...(created ? (from?.peer ? { except: from.peer } : {}) : from ? { replyTo: from } : {}),
    });
  };
}
