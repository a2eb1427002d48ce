// Scheduled prompts: schedule requests, their replies and events, and a due schedule's run.
import { FEATURE_SCHEDULES } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import type { CheckContext } from "../../context.js";
import { expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: scheduled prompts (`schedules`)";

export const scheduleChecks: Check[] = [
  {
    id: "extensions.schedules",
    section: SECTION,
    title:
      "schedules: create/list/update/delete with their replies (a client's schedule created_by user, confirmed, without auto_approve); the other schedules connections get schedule.changed without request_id, the requester only its reply; each rule broken is bad_request, an unknown conversation conversation_not_found, an unknown schedule not_found; a connection without the feature gets unknown_type and none of its events",
    async run(ctx) {
      const { plain, a, b } = await scheduleConnections(ctx);
      await plain.expectError({ type: "schedule.list" }, "unknown_type", "schedule.list without the feature");
      const conversation = await ctx.createConversation(a, "conformance schedules");
      const create = { type: "schedule.create", conversation_id: conversation, prompt: "conformance" };
      const { schedule } = await a.expectReply(
        { ...create, cron: "0 8 * * 1-5", timezone: "UTC", name: "conformance" },
        "schedule.created",
      );
      expect(
        schedule.conversation_id === conversation &&
          schedule.cron === "0 8 * * 1-5" &&
          schedule.at === null &&
          schedule.timezone === "UTC" &&
          schedule.enabled &&
          schedule.next_run_at !== null &&
          Date.parse(schedule.next_run_at) > Date.now() &&
          /^0?8:00:00/.test(new Date(schedule.next_run_at).toISOString().slice(11)),
        "schedule.created does not describe the schedule asked for (next run at 08:00 UTC on a weekday)",
        schedule,
      );
      expect(
        schedule.created_by === "user" && schedule.confirmed && !schedule.auto_approve,
        "a client's schedule is not created_by user, confirmed, without auto_approve",
        schedule,
      );
      const heard = await b.waitFor(
        (m) => m.type === "schedule.changed" && m.schedule.schedule_id === schedule.schedule_id,
        "schedule.changed of the creation on the other schedules connection",
      );
      expect(
        heard.type === "schedule.changed" && !heard.deleted && heard.request_id === undefined,
        "the other connection's schedule.changed is not the creation's broadcast",
        heard,
      );
      for (const [fields, what] of [
        [{ cron: "61 * * * *" }, "a cron minute of 61"],
        [{ cron: "0 8 * * *", timezone: "Nowhere/Atlantis" }, "an unknown time zone"],
        [{ at: "2001-01-01T00:00:00Z" }, "an at in the past"],
        [{}, "neither cron nor at"],
        [{ cron: "0 8 * * *", at: "2099-01-01T00:00:00Z" }, "both cron and at"],
      ] as const) {
        await a.expectError({ ...create, ...fields }, "bad_request", `schedule.create with ${what}`);
      }
      await a.expectError(
        { ...create, cron: "0 8 * * *", conversation_id: "0".repeat(32) },
        "conversation_not_found",
        "schedule.create in an unknown conversation",
      );
      for (const type of ["schedule.update", "schedule.delete"]) {
        await a.expectError(
          { type, schedule_id: "0".repeat(32), enabled: false },
          "not_found",
          `${type} of an unknown schedule`,
        );
      }
      const updated = await a.expectReply(
        { type: "schedule.update", schedule_id: schedule.schedule_id, enabled: false },
        "schedule.changed",
      );
      expect(
        !updated.deleted && !updated.schedule.enabled && updated.schedule.next_run_at === null,
        "a paused schedule is not enabled: false with next_run_at null",
        updated,
      );
      const other = await b.waitFor(
        (m) =>
          m.type === "schedule.changed" &&
          !m.schedule.enabled &&
          m.schedule.schedule_id === schedule.schedule_id,
        "schedule.changed of the update on the other connection",
      );
      expect(other.request_id === undefined, "the broadcast copy carries the requester's request_id", other);
      const { schedules } = await b.expectReply(
        { type: "schedule.list", conversation_id: conversation },
        "schedule.snapshot",
      );
      expect(
        schedules.length === 1 && schedules[0]!.schedule_id === schedule.schedule_id,
        "schedule.snapshot does not list the conversation's one schedule",
        schedules,
      );
      const deleted = await b.expectReply(
        { type: "schedule.delete", schedule_id: schedule.schedule_id },
        "schedule.changed",
      );
      expect(deleted.deleted, "schedule.delete's reply does not say deleted: true", deleted);
      await a.waitFor(
        (m) => m.type === "schedule.changed" && m.deleted && m.schedule.schedule_id === schedule.schedule_id,
        "schedule.changed of the deletion on the other connection",
      );
      await a.ping();
      const echoed = a.frames.filter(
        (m) => m.type === "schedule.changed" && m.schedule.schedule_id === schedule.schedule_id && !m.deleted,
      );
      expect(
        echoed.every((m) => m.request_id !== undefined),
        "the requester got the broadcast of its own change besides its reply",
        echoed,
      );
    },
  },
  {
    id: "extensions.schedules_run",
    section: SECTION,
    title:
      "schedules: a due schedule sends its prompt as a run nobody asked for (run.accepted without request_id … run.finished to every connection, v1 ones too), then records it (last_run_at, last_status), a one-shot schedule staying listed, disabled",
    needs: { simulator: true },
    async run(ctx) {
      const { plain, a } = await scheduleConnections(ctx);
      const conversation = await ctx.createConversation(a, "conformance scheduled run");
      const at = new Date(Date.now() + 1_500).toISOString();
      const { schedule } = await a.expectReply(
        { type: "schedule.create", conversation_id: conversation, prompt: "hello from a schedule", at },
        "schedule.created",
      );
      for (const probe of [a, plain]) {
        const accepted = await probe.waitFor(
          (m) => m.type === "run.accepted" && m.conversation_id === conversation,
          "the scheduled run's run.accepted",
          { timeoutMs: ctx.timeoutMs + 5_000 },
        );
        expect(
          accepted.request_id === undefined,
          "a scheduled run's run.accepted carries a request_id",
          accepted,
        );
        const runId = accepted.type === "run.accepted" ? accepted.run_id : "";
        const finished = await probe.waitFor(
          (m) => m.type === "run.finished" && m.run_id === runId,
          "the scheduled run's run.finished",
        );
        expect(
          finished.type === "run.finished" && finished.status === "completed",
          "the scheduled run did not complete",
          finished,
        );
      }
      const recorded = await a.waitFor(
        (m) =>
          m.type === "schedule.changed" &&
          m.schedule.schedule_id === schedule.schedule_id &&
          m.schedule.last_status !== null,
        "schedule.changed recording the run",
      );
      expect(
        recorded.type === "schedule.changed" &&
          recorded.schedule.last_status === "completed" &&
          recorded.schedule.last_run_at !== null &&
          !recorded.schedule.enabled &&
          recorded.schedule.next_run_at === null,
        "the run is not recorded on the one-shot schedule (completed, disabled, no next run)",
        recorded,
      );
      const history = await plain.expectReply(
        { type: "conversation.open", conversation_id: conversation },
        "conversation.history",
      );
      expect(
        history.messages.some((m) => m.role === "user" && m.text === "hello from a schedule"),
        "the scheduled prompt is not recorded in history",
        history,
      );
    },
  },
];

/** A v1 connection and two `schedules` connections (skips when the server does not offer schedules). */
async function scheduleConnections(ctx: CheckContext): Promise<{ plain: Probe; a: Probe; b: Probe }> {
  const plain = await ctx.connect("v1");
  const a = await ctx.connectWith("schedules-a", [FEATURE_SCHEDULES]);
  const b = await ctx.connectWith("schedules-b", [FEATURE_SCHEDULES]);
  return { plain, a, b };
}
