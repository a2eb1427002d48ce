import {
  applyDelta,
  CLOSE_CODES,
  FEATURE_DELTA_APPEND,
  FEATURE_DEVICES,
  FEATURE_EXPIRY,
  FEATURE_PUSH,
  FEATURE_SCHEDULES,
  PROTOCOL_VERSION,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { type Probe, runFrames } from "@pheby/testkit";
import { type CheckContext, expectFinished } from "../context.js";
import { CheckFailure, expect } from "../failure.js";
import { startReceiver } from "../push-receiver.js";
import type { Check } from "../types.js";
import { checkLifecycle } from "./runs.js";

type Delta = ServerMessageOf<"message.delta">;

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The message.delta frames of one run's draft, in order. */
function deltasOf(frames: readonly ServerMessage[], runId: string): Delta[] {
  return runFrames([...frames], runId).filter((m): m is Delta => m.type === "message.delta");
}

export const extensionChecks: Check[] = [
  {
    id: "extensions.delta_append",
    section: "Pheby extensions (hello.features)",
    title:
      "delta.append: a connection that asks gets offset deltas that stitch, step by step, to drafts that include every cumulative delta a v1 connection gets for the same run (in order; a v1 connection may get fewer of a long answer); one that does not ask gets v1 (no offset, no ready.features); unknown features are ignored",
    needs: { simulator: true },
    async run(ctx) {
      const plain = await ctx.raw("v1");
      const plainReady = await plain.hello(ctx.options.secret);
      expect(
        plainReady.features === undefined,
        "ready carries features although hello asked for none",
        plainReady,
      );
      const append = await ctx.raw("append");
      const asked = [FEATURE_DELTA_APPEND, "x-conformance-unknown-feature"];
      const ready = await append.hello(ctx.options.secret, asked);
      const enabled = ready.features ?? [];
      if (!enabled.includes(FEATURE_DELTA_APPEND))
        ctx.skip("the server does not offer delta.append (a v1 server may ignore hello.features)");
      expect(
        enabled.every((f) => f === FEATURE_DELTA_APPEND),
        "ready.features enables a feature the client did not ask for, or an unknown one",
        ready,
      );
      // Past 32 KiB, in several chunks: offsets well beyond deflate's window.
      const trace = await ctx.chat(plain, await ctx.createConversation(plain), "/sim long 70000");
      expectFinished(trace, "completed");
      const final = checkLifecycle(trace);
      await append.waitFor(
        (m) => m.type === "run.finished" && m.run_id === trace.runId,
        "run.finished on the delta.append connection",
      );
      const cumulative = deltasOf(trace.frames, trace.runId);
      const offered = cumulative.find((d) => d.offset !== undefined);
      if (offered)
        throw new CheckFailure("a connection that did not ask for delta.append got an offset", offered);
      const appended = deltasOf(append.frames, trace.runId);
      expect(
        appended.length >= cumulative.length,
        `the delta.append connection got ${appended.length} deltas, the v1 connection ${cumulative.length}`,
        appended.at(-1),
      );
      let draft = "";
      /** Index in `cumulative` of the next v1 delta to find among the stitched drafts. */
      let next = 0;
      for (const [i, d] of appended.entries()) {
        if (d.offset === undefined)
          throw new CheckFailure("a delta.append connection got a delta without offset", d);
        if (i === 0 && d.offset !== 0)
          throw new CheckFailure("the first delta of a message does not have offset 0", d);
        if (d.offset > draft.length)
          throw new CheckFailure(`offset ${d.offset} is beyond the draft (${draft.length})`, d);
        if (d.offset > 0 && isLowSurrogate(d.text.charCodeAt(0)))
          throw new CheckFailure("a delta starts inside a surrogate pair", d);
        draft = applyDelta(draft, d);
        if (!final.startsWith(draft))
          throw new CheckFailure(
            `the stitched draft after delta ${i + 1} is not a prefix of message.complete's text`,
            d,
          );
        // A server may send a v1 connection fewer deltas of a long answer, never other ones.
        if (draft === cumulative[next]?.text) next++;
      }
      if (next < cumulative.length)
        throw new CheckFailure(
          `the v1 connection's delta ${next + 1} is no stitched draft of the delta.append connection (after one of its deltas, in order)`,
          cumulative[next],
        );
      const complete = runFrames(append.frames, trace.runId).find((m) => m.type === "message.complete");
      expect(
        complete?.type === "message.complete" && complete.text === final,
        "message.complete differs between the two connections",
        complete,
      );
    },
  },
  {
    id: "extensions.schedules",
    section: "Pheby extensions: schedules",
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
    section: "Pheby extensions: schedules",
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
  {
    id: "extensions.expiry",
    section: "Pheby extensions: expiry",
    title:
      "expiry: a question the agent gives up on (/sim timeout) carries expires_at on an expiry connection, is withdrawn when it passes, and a notice says it expired; a v1 connection gets neither",
    needs: { simulator: true },
    async run(ctx) {
      const plain = await ctx.connect("v1");
      const probe = await ctx.connectWith("expiry", [FEATURE_EXPIRY]);
      const conversation = await ctx.createConversation(probe, "conformance expiry");
      const trace = await ctx.chat(probe, conversation, "/sim timeout", { timeoutMs: 60_000 });
      expectFinished(trace, "completed");
      const asked = probe.frames.find((m) => m.type === "approval.request" && m.run_id === trace.runId);
      expect(
        asked?.type === "approval.request" &&
          typeof asked.expires_at === "string" &&
          Date.parse(asked.expires_at) > Date.parse(asked.ts),
        "approval.request of /sim timeout carries no expires_at after its ts",
        asked,
      );
      // Withdrawn: failed closed, as if denied, without anyone answering it.
      const withdrawn = await probe.waitFor(
        (m) => m.type === "approval.resolved" && m.approval_id === asked.approval_id,
        "approval.resolved withdrawing the expired approval",
      );
      expect(
        withdrawn.type === "approval.resolved" && !withdrawn.accepted,
        "the expired approval was resolved as accepted",
        withdrawn,
      );
      // The notice follows the withdrawal, in the question's conversation.
      await probe.waitFor(
        (m) => m.type === "message.complete" && m.kind === "notice" && m.conversation_id === conversation,
        "notice in the conversation, after the withdrawal, that the approval expired",
        { from: probe.frames.indexOf(withdrawn) + 1 },
      );
      await plain.ping();
      const v1Notice = plain.frames.find(
        (m) => m.type === "message.complete" && m.kind === "notice" && m.conversation_id === conversation,
      );
      expect(v1Notice === undefined, "a v1 connection got the expiry notice", v1Notice);
    },
  },
  {
    id: "extensions.devices",
    section: "Pheby extensions (hello.features)",
    title:
      "devices: the owner's pair.create gives a single-use code and its pheby://pair URI; a pairing hello gets ready.device; the device secret works as a v1 client's secret on the socket and over HTTP, may not manage devices, and its connections close with 4401 when the owner revokes it; a v1 connection sees none of it",
    async run(ctx) {
      const observer = await ctx.raw("v1");
      await observer.hello(ctx.options.secret);
      const owner = await ctx.connectWith(
        "owner",
        [FEATURE_DEVICES],
        "a v1 server may ignore hello.features",
      );
      const request_id = owner.requestId();
      owner.send({ type: "pair.create", name: "conformance", request_id });
      const answer = await owner.reply(request_id, "pair.create");
      if (answer.type === "error" && answer.error.code === "not_implemented")
        ctx.skip(`the server cannot pair (${answer.error.message})`);
      if (answer.type !== "pair.created")
        throw new CheckFailure("pair.create was not answered with pair.created", answer);
      const uri = new URL(answer.uri);
      expect(
        uri.protocol === "pheby:" && uri.host === "pair" && uri.searchParams.get("code") === answer.code,
        "pair.created.uri is not pheby://pair?…&code=<code>",
        answer,
      );
      expect(
        /^wss?:\/\//.test(uri.searchParams.get("url") ?? ""),
        "the pairing URI's url is not ws:// or wss://",
        answer,
      );

      const phone = await ctx.raw("pairing");
      const paired = await phone.expectReply(
        {
          type: "hello",
          protocol_version: PROTOCOL_VERSION,
          features: [FEATURE_DEVICES],
          pairing_code: answer.code,
          device_name: "conformance phone",
        },
        "ready",
      );
      const device = paired.device;
      if (!device) throw new CheckFailure("a pairing hello's ready has no device", paired);
      const listed = await owner.expectReply({ type: "device.list" }, "device.snapshot");
      const row = listed.devices.find((d) => d.device_id === device.device_id);
      expect(
        row?.name === "conformance",
        "device.list does not show the device with pair.create's name",
        listed,
      );

      // A plain v1 client on the device secret: ready as in v1, requests and HTTP work.
      const v1 = await ctx.raw("device-v1");
      const v1Ready = await v1.hello(device.device_secret);
      expect(
        v1Ready.features === undefined && v1Ready.device === undefined,
        "a v1 hello with a device secret got extension fields in ready",
        v1Ready,
      );
      await v1.ping();
      const download = await ctx.http("/attachments/00000000000000000000000000000000", {
        auth: false,
        headers: { authorization: `Bearer ${device.device_secret}` },
      });
      expect(download.status === 404, `GET with the device secret answered ${download.status}, not 404`);
      const managing = await ctx.raw("device-devices");
      await managing.hello(device.device_secret, [FEATURE_DEVICES]);
      await managing.expectError({ type: "device.list" }, "bad_request", "device.list from a device");

      const seenBefore = new Map([v1, managing].map((conn) => [conn, conn.frames.length]));
      const revoked = await owner.expectReply(
        { type: "device.revoke", device_id: device.device_id },
        "device.revoked",
      );
      expect(revoked.device_id === device.device_id, "device.revoked names another device", revoked);
      for (const conn of [v1, managing]) {
        const error = await conn.waitFor(
          (m) => m.type === "error",
          "the revoked device's unauthorized error",
          {
            from: seenBefore.get(conn) ?? 0,
          },
        );
        expect(
          error.type === "error" && error.error.code === "unauthorized",
          "the revoked device's connection did not get unauthorized",
          error,
        );
        const closed = await conn.waitClosed("of the revoked device");
        expect(
          closed.code === CLOSE_CODES.unauthorized,
          `the revoked device's connection closed with ${closed.code}, not 4401`,
        );
      }
      // The probe holds every frame to the connection's features: a v1 connection's extension frame fails the check.
      await observer.ping();
    },
  },
  {
    id: "extensions.push",
    section: "Pheby extensions (hello.features)",
    title:
      "push: ready.push carries a VAPID key; push.subscribe/list/test/unsubscribe work; a local receiver gets approval, resolved and run_finished pushes it can decrypt, signed with that key; POST /approvals/{id} answers; a connection without push gets unknown_type",
    needs: { simulator: true },
    async run(ctx) {
      const pushy = await ctx.connectWith("push", [FEATURE_PUSH]);
      const vapidKey = pushy.ready?.push?.vapid_public_key;
      expect(vapidKey !== undefined, "ready.push is missing on a push connection", pushy.ready);
      const plain = await ctx.connect("v1");
      await plain.expectError({ type: "push.list" }, "unknown_type", "push.list without the push feature");

      const receiver = await startReceiver();
      try {
        const phone = receiver.endpoint("conformance");
        pushy.send({ type: "push.subscribe", endpoint: phone.endpoint, keys: phone.keys, request_id: "sub" });
        const subscribed = await pushy.reply("sub", "push.subscribe");
        if (subscribed.type === "error" && subscribed.error.code === "bad_request")
          ctx.skip(
            `the server refuses the local receiver's endpoint (${subscribed.error.message}); allow private endpoints (PHEBY_PUSH_ALLOW_PRIVATE=true) to run this check`,
          );
        if (subscribed.type !== "push.subscribed")
          throw new CheckFailure("push.subscribe was not answered with push.subscribed", subscribed);
        const id = subscribed.subscription_id;
        const listed = await pushy.expectReply({ type: "push.list" }, "push.subscriptions");
        expect(
          listed.subscriptions.some((s) => s.subscription_id === id && s.endpoint_origin === receiver.url),
          "push.list does not show the subscription with its endpoint's origin",
          listed,
        );
        const tested = await pushy.expectReply({ type: "push.test", subscription_id: id }, "push.tested");
        expect(tested.ok === true, "push.test did not reach the local receiver", tested);
        const test = await withTimeout(phone.next(), ctx.timeoutMs, "the test push");
        expect(test.payload.kind === "test", "the test push has another kind", test.payload as never);
        expect(test.vapid.publicKey === vapidKey, "the push is not signed with ready.push's VAPID key");

        const conversation = await ctx.createConversation(plain);
        const trace = await ctx.chat(plain, conversation, "/sim approval", {
          onAccepted: async () => {
            const asked = (await plain.waitFor(
              (m) => m.type === "approval.request",
              "approval.request",
            )) as ServerMessageOf<"approval.request">;
            const pushed = await withTimeout(phone.next(), ctx.timeoutMs, "the approval push");
            expect(
              pushed.payload.kind === "approval" && pushed.payload.approval_id === asked.approval_id,
              "the approval push does not name the approval",
              pushed.payload as never,
            );
            const answered = await ctx.http(`/approvals/${asked.approval_id}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ choice: "once" }),
            });
            expect(answered.status === 200, `POST /approvals/{id} answered ${answered.status}, not 200`);
            const resolved = await withTimeout(phone.next(), ctx.timeoutMs, "the resolved push");
            expect(
              resolved.payload.kind === "resolved" && resolved.payload.tag === pushed.payload.tag,
              "no resolved push with the approval's tag followed the answer",
              resolved.payload as never,
            );
          },
        });
        expectFinished(trace, "completed");
        const finished = await withTimeout(phone.next(), ctx.timeoutMs, "the run_finished push");
        expect(
          finished.payload.kind === "run_finished" && finished.payload.run_id === trace.runId,
          "no run_finished push for the run",
          finished.payload as never,
        );
        expect(receiver.errors.length === 0, `the receiver could not use a push: ${receiver.errors[0]}`);
        await pushy.expectReply({ type: "push.unsubscribe", subscription_id: id }, "push.unsubscribed");
        const after = await pushy.expectReply({ type: "push.list" }, "push.subscriptions");
        expect(
          !after.subscriptions.some((s) => s.subscription_id === id),
          "push.unsubscribe left the subscription",
          after,
        );
      } finally {
        await receiver.close();
      }
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

/** `promise`, or a CheckFailure naming `what` after `ms`. */
async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailure(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
