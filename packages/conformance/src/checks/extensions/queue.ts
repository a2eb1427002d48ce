import { FEATURE_QUEUE, LIMITS, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

const SECTION = "Extension: queued follow-ups (`queue`)";

/** `chat.send { queue: true }`: its reply, `run.queued` or `run.accepted` (or an error). */
async function queueSend(probe: Probe, conversationId: string, text: string): Promise<ServerMessage> {
  const request_id = probe.requestId();
  probe.send({ type: "chat.send", conversation_id: conversationId, text, queue: true, request_id });
  return probe.reply(request_id, "chat.send with queue: true");
}

async function queued(probe: Probe, conversationId: string, text: string) {
  const reply = await queueSend(probe, conversationId, text);
  if (reply.type !== "run.queued")
    throw new CheckFailure(`chat.send with queue: true during a run was answered ${reply.type}`, reply);
  return reply;
}

/** Start `/sim slow` (a run that lasts long enough to queue behind it); its run_id. */
async function slowRun(probe: Probe, conversationId: string): Promise<string> {
  const accepted = await probe.expectReply(
    { type: "chat.send", conversation_id: conversationId, text: "/sim slow" },
    "run.accepted",
  );
  return accepted.run_id;
}

const names = (m: ServerMessage, runId: string) => JSON.stringify(m).includes(runId);

export const queueChecks: Check[] = [
  {
    id: "extensions.queue",
    section: SECTION,
    title:
      "queue: chat.send { queue: true } during a run gets run.queued; queue connections get queue.changed; a cancelled queued run is the canceller's run.finished only; the rest start in order when the run ends, as ordinary runs a v1 connection sees from run.accepted on",
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("queue", [FEATURE_QUEUE]);
      const v1 = await ctx.connect("v1");
      const id = await ctx.createConversation(phone);
      const idle = await queueSend(phone, id, "hello");
      if (idle.type !== "run.accepted")
        throw new CheckFailure("queue: true without an active run did not just start", idle);
      await phone.waitFor((m) => m.type === "run.finished" && m.run_id === idle.run_id, "run.finished");

      const slow = await slowRun(phone, id);
      const next = await queued(phone, id, "follow-up");
      expect(next.position === 1, "the first queued run is not at position 1", next);
      const dropped = await queued(phone, id, "never mind");
      expect(dropped.position === 2, "the second queued run is not at position 2", dropped);
      const changed = (await phone.waitFor(
        (m) => m.type === "queue.changed" && m.queued.length === 2,
        "queue.changed listing both",
      )) as ServerMessageOf<"queue.changed">;
      expect(
        changed.queued.map((q) => [q.run_id, q.text, q.position]).join() ===
          [next.run_id, "follow-up", 1, dropped.run_id, "never mind", 2].join(),
        "queue.changed does not list the queue in order",
        changed,
      );
      const history = (await phone.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(history.queue?.length === 2, "conversation.history does not carry the queue", history);
      expect(
        !history.messages.some((m) => m.text === "follow-up"),
        "a queued message is in history before its run started",
        history,
      );

      const cancelled = await phone.expectReply(
        { type: "run.cancel", conversation_id: id, run_id: dropped.run_id },
        "run.finished",
      );
      expect(
        cancelled.status === "cancelled",
        "the cancel of a queued run did not finish it cancelled",
        cancelled,
      );
      await phone.waitFor(
        (m) => m.type === "queue.changed" && m.queued.length === 1,
        "queue.changed after the cancel",
      );
      await phone.expectReply({ type: "run.cancel", conversation_id: id, run_id: slow }, "run.finished");
      const start = await v1.waitFor(
        (m) => m.type === "run.accepted" && m.run_id === next.run_id,
        "run.accepted of the queued run on the v1 connection",
        { timeoutMs: 30_000 },
      );
      expect(!("request_id" in start), "a queued run's run.accepted carries a request_id", start);
      await v1.waitFor(
        (m) => m.type === "run.finished" && m.run_id === next.run_id,
        "run.finished of the queued run",
        { timeoutMs: 30_000 },
      );
      const leak = v1.frames.find((m) => names(m, dropped.run_id));
      if (leak) throw new CheckFailure("a connection without queue heard of a cancelled queued run", leak);
      const after = (await phone.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(after.queue?.length === 0, "the queue is not empty once its run started", after);
      expect(
        after.messages
          .filter((m) => m.role === "user")
          .map((m) => m.text)
          .join("|") === "hello|/sim slow|follow-up",
        "history does not show the queued message once its run started, in order",
        after,
      );
    },
  },
  {
    id: "extensions.queue_limit",
    section: SECTION,
    title: `queue: ${LIMITS.queuedRunsPerConversation} runs may wait in a conversation; one more gets bad_request`,
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("queue", [FEATURE_QUEUE]);
      const id = await ctx.createConversation(phone);
      await slowRun(phone, id);
      for (let i = 1; i <= LIMITS.queuedRunsPerConversation; i++) await queued(phone, id, `waiting ${i}`);
      const over = await queueSend(phone, id, "one too many");
      expect(
        over.type === "error" && over.error.code === "bad_request",
        `run ${LIMITS.queuedRunsPerConversation + 1} in the queue was not refused with bad_request`,
        over,
      );
      // Deleting the conversation drops its queue and cancels its run.
      await phone.expectReply({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    },
  },
];
