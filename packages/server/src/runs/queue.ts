import {
  FEATURE_QUEUE,
  FEATURE_RESUME,
  LIMITS,
  type QueuedRun as QueuedRunWire,
  type ServerMessageOf,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { type AttachmentStore, queuedHolder } from "../attachments/store.js";
import { ProtocolError } from "../errors.js";
import type { Outbox, OutboxEvent } from "../outbox/outbox.js";
import type { QueuedRun } from "../store/queue.js";
import type { ConversationRow, Store } from "../store/store.js";
import { newId } from "../util/ids.js";
import type { Clock } from "../util/time.js";
import type { RunEngine } from "./engine.js";

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
}

/**
 * The `queue` extension: follow-ups sent while a run is active wait in the
 * store (in order, at most {@link LIMITS.queuedRunsPerConversation}, across
 * restarts) and start, one by one, when the active run ends, whatever its
 * status, as ordinary runs nobody asked for live (`run.accepted` without
 * `request_id`, seen by every connection). Only `queue` connections hear of a
 * run before it starts: `queue.changed` on every change of the queue.
 */
export class RunQueue {
  constructor(private readonly deps: RunQueueDeps) {}

  /**
   * Queue a follow-up behind the conversation's active run: the reply is
   * `run.queued`, and `changed` the `queue.changed` to publish after it. Its
   * uploads are checked and claimed now (the errors of any send), and
   * announced when its run starts. `bad_request` past the limit.
   */
  enqueue(
    conv: ConversationRow,
    followUp: FollowUp,
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
    return this.#changed(conversationId);
  }

  /**
   * The conversation is being deleted: its queue goes first, so ending its
   * active run starts nothing (and no `queue.changed`: the deletion says it all).
   */
  drop(conversationId: string): void {
    this.deps.store.queue.clear(conversationId);
  }

  /** The queue as `conversation.history.queue` lists it for a peer with these features. */
  list(conversationId: string, features: ReadonlySet<string>): QueuedRunWire[] {
    return wire(this.deps.store.queue.list(conversationId), features.has(FEATURE_RESUME));
  }

  /** The conversation's active run ended (or the server started): start its next queued run, if any. */
  next(conversationId: string): void {
    const { store, runs, attachments, log } = this.deps;
    if (runs.busy(conversationId)) return;
    const conv = store.getConversation(conversationId);
    const queued = conv ? store.queue.shift(conversationId) : undefined;
    if (!conv || !queued) return;
    try {
      runs.send(conv, queued.text, {}, (messageId) => attachments.takeQueued(queued.runId, messageId), {
        runId: queued.runId,
        clientMessageId: queued.clientMessageId ?? undefined,
      });
    } catch (err) {
      log.error({ err, conversation: conversationId, run: queued.runId }, "a queued run could not start");
    }
    this.deps.outbox.publish(this.#changed(conversationId));
  }

  /** At start: every conversation with a queue left by the last process starts its next run. */
  resume(): void {
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
      feature: FEATURE_QUEUE,
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
