// Push notifications: subscriptions and the pushes a local receiver decrypts.
import { FEATURE_PUSH, type ServerMessageOf } from "@pheby/protocol";
import { expectFinished } from "../../context.js";
import { CheckFailure, expect } from "../../failure.js";
import { startReceiver } from "../../push-receiver.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: push notifications (`push`)";

export const pushChecks: Check[] = [
  {
    id: "extensions.push",
    section: SECTION,
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
