import type { Schedule, ServerMessage, ToolContentBlock, ToolDiffBlock } from "@pheby/protocol";
import type { Logger } from "pino";
import type { Outbox, OutboxEvent } from "../outbox/outbox.js";
import type { PushStore, PushSubscriptionRow } from "../store/push.js";
import type { Clock } from "../util/time.js";
import type { DeliveryResult, PushDelivery } from "./delivery.js";
import {
  approvalPush,
  clarifyPush,
  messagePush,
  type PushNotification,
  type ResolvedPushInput,
  type RunChanges,
  resolvedPush,
  runFinishedPush,
  schedulePush,
} from "./payload.js";
import type { Presence } from "./presence.js";

/** What {@link PushNotifier} needs. */
export interface PushNotifierDeps {
  store: PushStore;
  delivery: PushDelivery;
  presence: Presence;
  clock: Clock;
  log: Logger;
  /** Text in payloads (`PHEBY_PUSH_PREVIEW`, default true); false sends ids only. */
  preview: boolean;
  /** A conversation's current name, for titles (undefined: deleted). */
  conversationName(conversationId: string): string | undefined;
  /** `inbox`: the unread total of a subscription's reader (its device, or the owner for null), for a badge. */
  unread?(deviceId: string | null): number;
}

/**
 * A run's end, as the run engine's `finished` run event reports it (push sits below the engine, so
 * it names only what it reads).
 */
export interface RunEnd {
  conversationId: string;
  runId: string;
  /** Started by a client (its `chat.send`, its queued follow-up: → `run_finished`), or not (→ `message`). */
  byClient: boolean;
  status: "completed" | "cancelled" | "failed";
  error?: string;
  /** The answer's final text. */
  text: string;
  /** `changes`: the conversation's changes when the run moved them (the push body names them). */
  changes?: RunChanges;
}

interface Asked {
  conversationId: string;
  expiresAt?: number;
}

/**
 * Turns server events into pushes: one push per event, off the hot path (the delivery queues).
 * It is an {@link Outbox} around the Fanout: it forwards every event first, unchanged, then
 * observes it, so it never changes what a connection receives or when.
 *
 * - `approval.request` / `clarify.request` → `approval` / `clarify`;
 * - a run's end ({@link runFinished}, from the engine's run events): `run_finished` when a client
 *   started it, `message` when the agent did (a schedule, background output), never both, and
 *   nothing for a cancelled run;
 * - `approval.resolved` / `clarify.resolved` of a question that was pushed → `resolved` with the
 *   question's `Topic`, so a lock screen stops offering a stale action;
 * - `schedule.changed` of the agent's new, unconfirmed schedule → `schedule`, to every subscription.
 *
 * A conversation-bound push is skipped for a subscription only while {@link Presence} proves that
 * the principal that made it (the owner, or that device) is looking.
 */
export class PushNotifier implements Outbox {
  /** The tool each active run most recently ran, named by an approval push; until the run ends. */
  readonly #tools = new Map<string, string>();
  /** Questions pushed and still open, by approval_id / clarify_id. */
  readonly #asked = new Map<string, Asked>();
  /** The agent's schedules already pushed as awaiting confirmation (one push each). */
  readonly #proposed = new Set<string>();

  constructor(
    private readonly inner: Outbox,
    private readonly deps: PushNotifierDeps,
  ) {}

  /** Forward the event, then observe it. Never throws into the publisher. */
  publish(event: OutboxEvent): void {
    this.inner.publish(event);
    try {
      this.#observe(event);
    } catch (err) {
      this.deps.log.error({ err, type: event.message.type }, "push notifier failed on an event");
    }
  }

  #observe(event: OutboxEvent): void {
    const msg: ServerMessage = event.message;
    switch (msg.type) {
      case "tool.event":
        if (msg.run_id !== undefined && msg.status === "running") this.#tools.set(msg.run_id, msg.tool_name);
        return;
      case "approval.request": {
        const tool = msg.run_id === null ? undefined : this.#tools.get(msg.run_id);
        const diffs = diffsOf(event);
        this.#ask(msg.approval_id, msg.conversation_id, event, (conversationName, expiry, now) =>
          approvalPush(
            { ...msg, conversationName, ...(tool ? { tool } : {}), ...(diffs ? { diffs } : {}), ...expiry },
            now,
          ),
        );
        return;
      }
      case "clarify.request":
        this.#ask(msg.clarify_id, msg.conversation_id, event, (conversationName, expiry, now) =>
          clarifyPush({ ...msg, conversationName, ...expiry }, now),
        );
        return;
      case "approval.resolved":
        this.#resolved(msg.approval_id, (asked) => ({ approval_id: msg.approval_id, ...asked }));
        return;
      case "clarify.resolved":
        this.#resolved(msg.clarify_id, (asked) => ({ clarify_id: msg.clarify_id, ...asked }));
        return;
      case "schedule.changed":
        this.#schedule(msg.schedule, msg.deleted);
        return;
      default:
        return;
    }
  }

  /** Push a question (unless the owner is looking) and remember it, so its resolution replaces it. */
  #ask(
    id: string,
    conversationId: string,
    event: OutboxEvent,
    build: (name: string, expiry: { expiresAt?: number }, now: number) => PushNotification,
  ): void {
    const name = this.deps.conversationName(conversationId);
    if (name === undefined) return;
    const expiresAt = expiryOf(event);
    const expiry = expiresAt === undefined ? {} : { expiresAt };
    if (this.#notify(build(name, expiry, this.deps.clock.now())) > 0) {
      this.#asked.set(id, { conversationId, ...expiry });
    }
  }

  /** A pushed question was answered or withdrawn: replace it with `resolved` (same Topic). */
  #resolved(
    id: string,
    input: (asked: { conversation_id: string; expiresAt?: number }) => ResolvedPushInput,
  ): void {
    const asked = this.#asked.get(id);
    if (!asked) return;
    this.#asked.delete(id);
    const base = {
      conversation_id: asked.conversationId,
      ...(asked.expiresAt === undefined ? {} : { expiresAt: asked.expiresAt }),
    };
    this.#send(resolvedPush(input(base), this.deps.clock.now()));
  }

  /** The agent's new schedule waits for the user's confirmation: tell every subscription, once. */
  #schedule(schedule: Schedule, deleted: boolean): void {
    const id = schedule.schedule_id;
    if (deleted || schedule.confirmed) {
      this.#proposed.delete(id);
      return;
    }
    if (schedule.created_by !== "agent" || this.#proposed.has(id)) return;
    const name = this.deps.conversationName(schedule.conversation_id);
    if (name === undefined) return;
    this.#proposed.add(id);
    this.#send(
      schedulePush(
        {
          conversation_id: schedule.conversation_id,
          schedule_id: id,
          prompt: schedule.prompt,
          conversationName: name,
        },
        this.deps.clock.now(),
      ),
    );
  }

  /** A run ended (the engine's `finished` run event). Never throws into the engine. */
  runFinished(run: RunEnd): void {
    try {
      this.#runFinished(run);
    } catch (err) {
      this.deps.log.error({ err, run: run.runId }, "push notifier failed on a run's end");
    }
  }

  #runFinished({ conversationId, runId, byClient, status, error, text, changes }: RunEnd): void {
    this.#tools.delete(runId);
    if (status === "cancelled") return; // the owner cancelled it: they know
    const name = this.deps.conversationName(conversationId);
    if (name === undefined) return;
    const base = { conversation_id: conversationId, run_id: runId, conversationName: name };
    const now = this.deps.clock.now();
    if (byClient) {
      this.#notify(
        runFinishedPush(
          {
            ...base,
            status,
            text: status === "failed" ? (error ?? text) : text,
            ...(changes ? { changes } : {}),
          },
          now,
        ),
      );
    } else if (status === "completed" && text.trim() !== "") {
      this.#notify(messagePush({ ...base, text }, now));
    }
  }

  /**
   * Send a conversation's notification to every subscription whose own principal is not looking at
   * the conversation (see {@link Presence}); returns how many were queued.
   */
  #notify(notification: PushNotification): number {
    const watching =
      notification.conversationId === undefined
        ? undefined
        : this.deps.presence.watching(notification.conversationId);
    return this.#send(notification, (s) => !watching?.has(s.device_id));
  }

  /** Queue a notification for every subscription that chose its event (and passes `also`); returns how many. */
  #send(notification: PushNotification, also: (s: PushSubscriptionRow) => boolean = () => true): number {
    const targets = this.deps.store
      .list()
      .filter((s) => (notification.event === undefined || s.events.includes(notification.event)) && also(s));
    for (const sub of targets) void this.send(sub, notification);
    return targets.length;
  }

  /** Queue one notification for one subscription (also `push.test`). */
  send(
    subscription: PushSubscriptionRow,
    notification: PushNotification,
    options?: { once?: boolean },
  ): Promise<DeliveryResult> {
    // Every payload but a test carries its reader's unread total, so the app can show a badge.
    const unread = notification.kind === "test" ? undefined : this.deps.unread?.(subscription.device_id);
    const counted =
      unread === undefined ? notification : { ...notification, ids: { ...notification.ids, unread } };
    return this.deps.delivery.enqueue(subscription, counted, this.deps.preview, options);
  }
}

/** The diff blocks of an approval's `activity` preview (an edit), if it has any. */
function diffsOf(
  event: OutboxEvent,
): Array<{ display: string; additions: number; deletions: number }> | undefined {
  const preview = event.fields?.activity?.preview;
  if (!Array.isArray(preview)) return undefined;
  const diffs = (preview as ToolContentBlock[]).filter((b): b is ToolDiffBlock => b.type === "diff");
  return diffs.length > 0 ? diffs : undefined;
}

/** When the agent gives up on a question, if the `expiry` extension told (ms since the epoch). */
function expiryOf(event: OutboxEvent): number | undefined {
  const at = event.fields?.expiry?.expires_at;
  const ms = typeof at === "string" ? Date.parse(at) : Number.NaN;
  return Number.isNaN(ms) ? undefined : ms;
}
