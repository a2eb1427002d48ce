import { FEATURE_RESUME, type ServerMessage } from "@pheby/protocol";
import type { Fanout } from "../outbox/fanout.js";
import type { Outbox, OutboxEvent } from "../outbox/outbox.js";
import type { ExtensionFields, LoggedEvent, ResumeLog, ResumeWindow } from "../store/resume-log.js";

/**
 * The `resume` extension's Outbox, around the Fanout: every event of a
 * conversation is given the conversation's next `seq` and stored in the
 * resume log before it is serialised, then sent with `seq` (and, for
 * `approval.resolved` / `clarify.resolved`, the `conversation_id` their v1
 * form lacks) as fields only `resume` peers get. Every event is logged,
 * whoever is connected, since a phone may come back later and ask.
 *
 * It also gives `conversation.open` what a `resume` peer is answered with:
 * the missed events straight from the log, or the snapshot's `seq`, and the
 * `seq` of a direct reply (the `resume` extension's reply fields).
 */
export class ResumeOutbox implements Outbox {
  constructor(
    private readonly fanout: Fanout,
    private readonly log: ResumeLog,
  ) {}

  publish(event: OutboxEvent): void {
    const { conversationId } = event;
    // `inbox`'s conversation.status is about the list, not the open conversation: no seq, not logged
    // (a client lists again after a reconnect).
    if (conversationId === null || event.message.type === "conversation.status") {
      this.fanout.publish(event);
      return;
    }
    const fields = event.fields ?? {};
    const seq = this.log.append(conversationId, event.message, { feature: event.feature, fields });
    this.fanout.publish({ ...event, fields: withResume(fields, event.message, conversationId, seq) });
    // A deleted conversation's events go (its seq stays): nobody can open it any more.
    if (event.message.type === "conversation.deleted") this.log.forget(conversationId);
  }

  /**
   * The fields a direct reply about a conversation gets on a `resume`
   * connection: `seq`, the conversation's position when it is sent
   * (`conversation.resumed` has its `from_seq` and `to_seq` instead, a
   * history its own `seq`).
   */
  replyFields(reply: ServerMessage): Record<string, unknown> | undefined {
    if ("seq" in reply || reply.type === "conversation.resumed") return undefined;
    const conversationId = (reply as { conversation_id?: unknown }).conversation_id;
    return typeof conversationId === "string" ? { seq: this.log.lastSeq(conversationId) } : undefined;
  }

  /** The conversation's position: the `seq` of its latest event (0 before the first). */
  position(conversationId: string): number {
    return this.log.lastSeq(conversationId);
  }

  /** What the log holds after `since` (see {@link ResumeLog.after}). */
  after(conversationId: string, since: number): ResumeWindow {
    return this.log.after(conversationId, since);
  }

  /**
   * The events the log holds after `since` (a complete {@link after} window), as they are sent again
   * to a `resume` peer after its `conversation.resumed`: in their order, extension fields as their
   * live copies had them, without anyone's `request_id`. The connection layer sends them, to that
   * peer alone, in the same synchronous stretch as the window was read.
   */
  replayed(conversationId: string, window: Extract<ResumeWindow, { complete: true }>): OutboxEvent[] {
    return window.events.map((logged) => replayed(conversationId, logged));
  }
}

/** An event sent again from the log, as its live copy was for a `resume` peer. */
function replayed(conversationId: string, logged: LoggedEvent): OutboxEvent {
  return {
    message: logged.event,
    conversationId,
    ...(logged.feature === null ? {} : { feature: logged.feature }),
    fields: withResume(logged.fields ?? {}, logged.event, conversationId, logged.seq),
  };
}

/**
 * `fields` plus `resume`'s derived ones: `seq`, and the conversation of the `*.resolved` events
 * whose v1 form lacks it (after any `resume` field the event itself carries).
 */
function withResume(
  fields: ExtensionFields,
  message: ServerMessage,
  conversationId: string,
  seq: number,
): ExtensionFields {
  const placed = message.type === "approval.resolved" || message.type === "clarify.resolved";
  return {
    ...fields,
    [FEATURE_RESUME]: {
      ...fields[FEATURE_RESUME],
      ...(placed ? { conversation_id: conversationId } : {}),
      seq,
    },
  };
}
