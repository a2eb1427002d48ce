import {
  applyDelta,
  CLOSE_CODES,
  checkFeatures,
  FEATURE_DELTA_APPEND,
  FEATURE_DEVICES,
  FEATURE_PUSH,
  PROTOCOL_VERSION,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { expectFinished, runFrames } from "../context.js";
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
      "delta.append: a connection that asks gets offset deltas that stitch to the cumulative deltas a v1 connection gets for the same run, step by step; one that does not ask gets v1 (no offset, no ready.features); unknown features are ignored",
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
        appended.length === cumulative.length,
        `the delta.append connection got ${appended.length} deltas, the v1 connection ${cumulative.length}`,
        appended.at(-1),
      );
      let draft = "";
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
        if (draft !== cumulative[i]!.text)
          throw new CheckFailure(
            `the stitched draft after delta ${i + 1} differs from the v1 connection's`,
            d,
          );
      }
      const complete = runFrames(append.frames, trace.runId).find((m) => m.type === "message.complete");
      expect(
        complete?.type === "message.complete" && complete.text === final,
        "message.complete differs between the two connections",
        complete,
      );
      expect(
        final.startsWith(draft),
        "the stitched draft is not a prefix of message.complete's text",
        appended.at(-1),
      );
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
      const owner = await ctx.raw("owner");
      const ready = await owner.hello(ctx.options.secret, [FEATURE_DEVICES]);
      if (!(ready.features ?? []).includes(FEATURE_DEVICES))
        ctx.skip("the server does not offer devices (a v1 server may ignore hello.features)");
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
      const paired = await phone.request(
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
      const listed = await owner.request({ type: "device.list" }, "device.snapshot");
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
      const revoked = await owner.request(
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
      await observer.ping();
      const leak = observer.frames.find((m) => checkFeatures(m, []) !== undefined);
      if (leak) throw new CheckFailure("a v1 connection received a frame of an extension", leak);
    },
  },
  {
    id: "extensions.push",
    section: "Pheby extensions (hello.features)",
    title:
      "push: ready.push carries a VAPID key; push.subscribe/list/test/unsubscribe work; a local receiver gets approval, resolved and run_finished pushes it can decrypt, signed with that key; POST /approvals/{id} answers; a connection without push gets unknown_type",
    needs: { simulator: true },
    async run(ctx) {
      const pushy = await ctx.raw("push");
      const ready = await pushy.hello(ctx.options.secret, [FEATURE_PUSH]);
      if (!(ready.features ?? []).includes(FEATURE_PUSH)) ctx.skip("the server does not offer push");
      const vapidKey = ready.push?.vapid_public_key;
      expect(vapidKey !== undefined, "ready.push is missing on a push connection", ready);
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
        const listed = await pushy.request({ type: "push.list" }, "push.subscriptions");
        expect(
          listed.subscriptions.some((s) => s.subscription_id === id && s.endpoint_origin === receiver.url),
          "push.list does not show the subscription with its endpoint's origin",
          listed,
        );
        const tested = await pushy.request({ type: "push.test", subscription_id: id }, "push.tested");
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
        await pushy.request({ type: "push.unsubscribe", subscription_id: id }, "push.unsubscribed");
        const after = await pushy.request({ type: "push.list" }, "push.subscriptions");
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
