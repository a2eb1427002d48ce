import {
  FEATURE_RESUME,
  LIMITS,
  type QueuedRun as QueuedRunWire,
  type RunStatus,
  type ServerMessageOf,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { type AttachmentStore, queuedHolder } from "../attachments/store.js";
import { ProtocolError } from "../errors.js";
import type { Outbox, OutboxEvent } from "../outbox/outbox.js";
import type { QueuedRun } from "../store/queue.js";
import type { ScheduleRow } from "../store/schedules.js";
import type { ConversationRow, Store } from "../store/store.js";
import { newId } from "../util/ids.js";
import type { Clock } from "../util/time.js";
import type { RunEngine, RunEvent, RunOwner } from "./engine.js";

/** What the queue needs from the server. */
export interface RunQueueDeps {
  store: Store;
  runs: RunEngine;
  attachments: AttachmentStore;
  outbox: Outbox;
  clock: Clock;
  log: Logger;
}

/** A follow-up to queue: a `chat.send` with `queue: true` while a run is active. */
export interface FollowUp {
  text: string;
  clientMessageId: string | undefined;
  attachmentIds: readonly string[];
  /** The paired device that sent it; null: the owner. */
  deviceId: string | null;
}

/** The schedule a server prompt comes from, as the queue records it. */
export type PromptSource = Pick<ScheduleRow, "id" | "device_id" | "auto_approve">;

/**
 * The `queue` extension: follow-ups sent while a run is active wait in the
 * store (in order, at most {@link LIMITS.queuedRunsPerConversation}, across
 * restarts) and start, one by one, when the active run ends, whatever its
 * status, as ordinary runs nobody asked for live (`run.accepted` without
 * `request_id`, seen by every connection). Only `queue` connections hear of a
 * run before it starts: `queue.changed` on every change of the queue.
 */
export class RunQueue {
  /** Queued prompts of the server's own (scheduled ones) waiting to be told how their run ended. */
  readonly #waiting = new Map<string, (status: RunStatus | "gone") => void>();

  constructor(private readonly deps: RunQueueDeps) {
    deps.runs.onRun((event) => this.#observe(event));
  }

  /**
   * Whatever its status, a run's end starts the conversation's next queued run; one ended by a
   * shutdown does not (the queue waits in the store for {@link startAfterRestart}).
   */
  #observe(event: RunEvent): void {
    if (event.type !== "finished" || event.shutdown) return;
    this.next(event.conversationId, { runId: event.runId, status: event.status });
  }

  /** A schedule comes due: its prompt is a {@link RunQueue.serverPrompt} in its conversation, or `gone` with it. */
  async fireSchedule(schedule: ScheduleRow): Promise<RunStatus | "gone"> {
    const conv = this.deps.store.getConversation(schedule.conversation_id);
    return conv ? this.serverPrompt(conv, schedule.prompt, schedule) : "gone";
  }

  /**
   * A prompt of the server's own (a scheduled one), as a run nobody on the socket asked for: it starts
   * now when the conversation is idle; behind an active run or queued follow-ups it joins the queue in
   * their order (`queue` peers see it and may cancel it). Resolves with how its run ended: `cancelled`
   * when cancelled while queued, `gone` when its conversation went first. A full queue does not refuse
   * it: it then waits its turn outside the queue.
   */
  serverPrompt(conv: ConversationRow, text: string, source: PromptSource): Promise<RunStatus | "gone"> {
    const { store, runs, outbox, log } = this.deps;
    const owner: RunOwner = { deviceId: source.device_id, autoApprove: source.auto_approve };
    if (!runs.busy(conv.id) && store.queue.list(conv.id).length === 0)
      return runs.runPrompt(conv, text, owner);
    let queued: ReturnType<RunQueue["enqueue"]>;
    try {
      queued = this.enqueue(
        conv,
        { text, clientMessageId: undefined, attachmentIds: [], deviceId: source.device_id },
        source.id,
      );
    } catch (err) {
      log.warn(
        { err, conversation: conv.id },
        "the queue is full: a scheduled prompt waits its turn outside it",
      );
      return runs.runPrompt(conv, text, owner);
    }
    outbox.publish(queued.changed);
    return new Promise((resolve) => this.#waiting.set(queued.queued.run_id, resolve));
  }

  /** A queued prompt of the server's own ended, one way or another. */
  #settle(runId: string, status: RunStatus | "gone"): void {
    this.#waiting.get(runId)?.(status);
    this.#waiting.delete(runId);
  }

  /**
   * Queue a follow-up behind the conversation's active run: the reply is
   * `run.queued`, and `changed` the `queue.changed` to publish after it. Its
   * uploads are checked and claimed now (the errors of any send), and
   * announced when its run starts. `bad_request` past the limit.
   */
  enqueue(
    conv: ConversationRow,
    followUp: FollowUp,
    scheduleId: string | null = null,
  ): { queued: ServerMessageOf<"run.queued">; changed: OutboxEvent } {
    const { store, attachments, clock } = this.deps;
    const runId = newId();
    // One transaction: a full queue claims nothing, a refused claim queues nothing.
    const position = store.transaction(() => {
      attachments.claim(conv.id, followUp.attachmentIds, queuedHolder(runId));
      const queued = store.queue.enqueue({
        runId,
        conversationId: conv.id,
        text: followUp.text,
        clientMessageId: followUp.clientMessageId ?? null,
        attachmentIds: [...followUp.attachmentIds],
        queuedAt: clock.now(),
        deviceId: followUp.deviceId,
        scheduleId,
      });
      if (queued === null) {
        throw new ProtocolError(
          "bad_request",
          `at most ${LIMITS.queuedRunsPerConversation} runs may be queued in a conversation`,
        );
      }
      return queued;
    });
    return {
      queued: { type: "run.queued", conversation_id: conv.id, run_id: runId, position },
      changed: this.#changed(conv.id),
    };
  }

  /**
   * `run.cancel` of a queued run: it leaves the queue (its uploads are
   * unclaimed again); returns the `queue.changed` to publish after the reply,
   * or undefined when the run is not queued in that conversation.
   */
  cancel(conversationId: string, runId: string): OutboxEvent | undefined {
    if (!this.deps.store.queue.remove(conversationId, runId)) return undefined;
    this.deps.attachments.releaseQueued(runId);
    this.#settle(runId, "cancelled");
    return this.#changed(conversationId);
  }

  /**
   * A device was revoked: every run it queued leaves its queue, as if cancelled, and each queue that
   * changed is published (`queue.changed`). Returns how many runs were removed.
   */
  dropDevice(deviceId: string): number {
    const queued = this.deps.store.queue.ofDevice(deviceId);
    const changed = new Set<string>();
    for (const run of queued) {
      if (this.cancel(run.conversationId, run.runId)) changed.add(run.conversationId);
    }
    for (const conversationId of changed) this.deps.outbox.publish(this.#changed(conversationId));
    return queued.length;
  }

  /**
   * The conversation is being deleted: its queue goes first, so ending its
   * active run starts nothing (and no `queue.changed`: the deletion says it all).
   */
  drop(conversationId: string): void {
    for (const queued of this.deps.store.queue.list(conversationId)) this.#settle(queued.runId, "gone");
    this.deps.store.queue.clear(conversationId);
  }

  /** The queue as `conversation.history.queue` lists it for a peer with these features. */
  list(conversationId: string, features: ReadonlySet<string>): QueuedRunWire[] {
    return wire(this.deps.store.queue.list(conversationId), features.has(FEATURE_RESUME));
  }

  /**
   * The conversation's active run ended (`ended`: which, and how; the engine's `finished` event), or
   * the server started: start its next queued run, if any.
   */
  next(conversationId: string, ended?: { runId: string; status: RunStatus }): void {
    if (ended) this.#settle(ended.runId, ended.status);
    const { store, runs, attachments, log } = this.deps;
    if (runs.busy(conversationId)) return;
    const conv = store.getConversation(conversationId);
    const queued = conv ? store.queue.shift(conversationId) : undefined;
    if (!conv || !queued) return;
    // A follow-up a client queued is its own run (a run_finished push), though nobody waits for a
    // reply to it; a scheduled prompt that joined the queue is the server's, auto-approved only when
    // its schedule (read now, so also after a restart) allows it.
    const byClient = queued.scheduleId === null;
    const schedule = queued.scheduleId === null ? undefined : store.schedules.get(queued.scheduleId);
    const owner: RunOwner = {
      deviceId: queued.deviceId,
      autoApprove: byClient || schedule?.auto_approve === true,
    };
    try {
      runs.send(conv, queued.text, {}, (messageId) => attachments.takeQueued(queued.runId, messageId), {
        runId: queued.runId,
        clientMessageId: queued.clientMessageId ?? undefined,
        owner,
        byClient,
      });
    } catch (err) {
      log.error({ err, conversation: conversationId, run: queued.runId }, "a queued run could not start");
      this.#settle(queued.runId, "failed");
    }
    this.deps.outbox.publish(this.#changed(conversationId));
  }

  /**
   * At start, once the agent is up: every conversation with a queue left by the last process starts
   * its next run. (Not the `resume` extension, which is about a client's reconnection.)
   */
  startAfterRestart(): void {
    for (const conversationId of this.deps.store.queue.conversations()) this.next(conversationId);
  }

  /**
   * The event that tells `queue` connections the whole queue. The queued runs'
   * `client_message_id`s are `resume`'s: `resume` peers get the list with them
   * (as that extension's fields).
   */
  #changed(conversationId: string): OutboxEvent {
    const queued = this.deps.store.queue.list(conversationId);
    return {
      message: { type: "queue.changed", conversation_id: conversationId, queued: wire(queued, false) },
      conversationId,
      fields: { [FEATURE_RESUME]: { queued: wire(queued, true) } },
    };
  }
}

/** The wire form of a queue, next first, with `client_message_id` only for `resume` peers. */
function wire(queued: readonly QueuedRun[], withIds: boolean): QueuedRunWire[] {
  return queued.map((run, i) => ({
    run_id: run.runId,
    text: run.text,
    position: i + 1,
    ...(withIds && run.clientMessageId !== null ? { client_message_id: run.clientMessageId } : {}),
  }));
}
