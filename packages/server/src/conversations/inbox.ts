import {
  type ConversationPreview,
  type ConversationStatusValue,
  codePointLength,
  FEATURE_INBOX,
  LIMITS,
  type ServerMessageOf,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { readerOf } from "../auth/principal.js";
import type { Origin, Outbox, OutboxEvent, Peer } from "../outbox/outbox.js";
import type { ConversationRow, Store } from "../store/store.js";
import { iso } from "../util/time.js";

/** What one conversation looks like in every reader's list, but for `unread`. */
export interface ListState {
  status: ConversationStatusValue;
  pending: number;
  preview: ConversationPreview | null;
  archived: boolean;
}

/** A list entry's `inbox` fields for one reader, in the protocol's order. */
export type InboxFields = Pick<
  ServerMessageOf<"conversation.status">,
  "status" | "pending" | "unread" | "preview" | "archived"
>;

/** What {@link Inbox} needs of the rest of the server (injected: the runs and decisions are above it). */
export interface InboxDeps {
  store: Store;
  /** Whether the conversation has an active run. */
  running(conversationId: string): boolean;
  /** How many approvals and questions of the conversation wait for an answer. */
  pending(conversationId: string): number;
  log: Logger;
}

// Events after which a conversation's list state may differ: a run started or ended, an answer was
// recorded, a question arrived or went. Deltas change nothing a list shows (the preview is the last
// recorded message), so they are not looked at.
const CHANGES = new Set([
  "run.accepted",
  "message.complete",
  "run.finished",
  "approval.request",
  "approval.resolved",
  "clarify.request",
  "clarify.resolved",
]);

/** Shorten to at most `max` code points, on a whole code point, marking the cut with "…". */
export function shorten(text: string, max: number): string {
  if (codePointLength(text) <= max) return text;
  return `${[...text].slice(0, max - 1).join("")}…`;
}

/**
 * The `inbox` extension's state of the conversation list: each conversation's status, pending
 * questions, preview and archive state, and each reader's unread count (readers: the master secret
 * and each paired device, `readerOf`).
 *
 * It is also an Outbox wrapper: it forwards every event, then, after one that may change a
 * conversation's list state, sends `conversation.status` to the `inbox` peers of each reader whose
 * view of it changed (its own `unread`). It remembers what each reader was last told, for every
 * reader whether connected or not, so a reader who comes back and lists is told only later changes.
 * `conversation.created` / `conversation.updated` gain the fields for each reader (`readerFields`).
 */
export class Inbox implements Outbox {
  /** What each reader was last told of each conversation (the frame's JSON, without request_id). */
  readonly #told = new Map<string, string>();
  #inner: Outbox | undefined;

  constructor(private readonly deps: InboxDeps) {}

  /** The Outbox this one forwards to, and publishes its own events on (the ResumeOutbox does not log them). */
  wrap(inner: Outbox): Outbox {
    this.#inner = inner;
    return this;
  }

  publish(event: OutboxEvent): void {
    const { message, conversationId } = event;
    if (
      conversationId !== null &&
      (message.type === "conversation.updated" || message.type === "conversation.created")
    ) {
      this.#inner!.publish({ ...event, readerFields: this.#readerFields(conversationId) });
      return;
    }
    this.#inner!.publish(event);
    if (conversationId === null || !CHANGES.has(message.type)) return;
    // Never throws into the publisher: a list row left stale is corrected by the next list.
    try {
      this.changed(conversationId);
    } catch (err) {
      this.deps.log.error({ err, type: message.type }, "inbox could not update a conversation's list state");
    }
  }

  /** The reader-independent part of a conversation's list state. */
  state(conv: ConversationRow): ListState {
    const { store } = this.deps;
    const pending = this.deps.pending(conv.id);
    const status: ConversationStatusValue =
      pending > 0
        ? "waiting"
        : this.deps.running(conv.id)
          ? "running"
          : store.inbox.lastRunFailed(conv.id)
            ? "failed"
            : "idle";
    const last = store.inbox.lastMessage(conv.id);
    const preview = last
      ? {
          role: last.role,
          text: shorten(last.text, LIMITS.inboxPreviewChars),
          ts: last.ts === null ? null : iso(last.ts),
        }
      : null;
    return { status, pending, preview, archived: conv.archived === 1 };
  }

  /** A list entry's `inbox` fields for `reader`. */
  fields(conv: ConversationRow, reader: string, state = this.state(conv)): InboxFields {
    const { status, pending, preview, archived } = state;
    return { status, pending, unread: this.deps.store.inbox.unread(reader, conv.id), preview, archived };
  }

  /**
   * Tell every reader whose view of the conversation changed (or, with `force`, every `inbox` peer
   * `to` selects) its `conversation.status`; `replyTo` makes it the reply to a request.
   */
  changed(
    conversationId: string,
    opts: { force?: boolean; replyTo?: Origin; to?: (peer: Peer) => boolean } = {},
  ): void {
    const conv = this.deps.store.getConversation(conversationId);
    if (!conv) return;
    const state = this.state(conv);
    const frames = new Map<string, ServerMessageOf<"conversation.status">>();
    for (const reader of this.deps.store.inbox.readers()) {
      const frame = {
        type: "conversation.status" as const,
        conversation_id: conversationId,
        ...this.fields(conv, reader, state),
      };
      const key = `${reader}\n${conversationId}`;
      const json = JSON.stringify(frame);
      if (this.#told.get(key) !== json || opts.force) frames.set(reader, frame);
      this.#told.set(key, json);
    }
    const [first] = frames.values();
    if (!first) return;
    const only = opts.to;
    this.#inner!.publish({
      message: first,
      conversationId,
      ...(opts.replyTo ? { replyTo: opts.replyTo } : {}),
      to: (peer) => {
        const reader = readerOf(peer.principal);
        return reader !== null && frames.has(reader) && (only === undefined || only(peer));
      },
      readerFields: { feature: FEATURE_INBOX, of: (reader) => ({ unread: frames.get(reader)!.unread }) },
    });
  }

  /** Forget what readers were told of a conversation (it was deleted). */
  forget(conversationId: string): void {
    for (const key of this.#told.keys()) if (key.endsWith(`\n${conversationId}`)) this.#told.delete(key);
  }

  #readerFields(conversationId: string): OutboxEvent["readerFields"] {
    const conv = this.deps.store.getConversation(conversationId);
    if (!conv) return undefined;
    const state = this.state(conv);
    return { feature: FEATURE_INBOX, of: (reader) => ({ ...this.fields(conv, reader, state) }) };
  }
}
