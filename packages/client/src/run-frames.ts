// Which frames belong to the run a `chat()` started. A port of the Kotlin client's RunFrames.kt:
// both clients follow a run by the same rules.
import type { ServerMessage, ServerMessageOf } from "@pheby/protocol";

/** The `request_id`s of the re-opens after a reconnect start with this: their answers are resync answers. */
export const RESYNC_REQUEST_PREFIX = "resync-";

/**
 * Which frames belong to the run a `chat()` started, in the order to emit them. The run is known by
 * the reply to its `chat.send` (`sendId`): `run.accepted`, or `run.queued` (then it starts with a
 * `run.accepted` of the same `run_id` later). One run at a time per conversation, so once it started
 * every message, tool, question, attachment and usage update of the conversation is the run's, until
 * its `run.finished`; thoughts and plans name their run.
 *
 * After a drop the reply may come late: with `resume`, after the replay of the run's first frames (its
 * `run.accepted` among them, which handlers then see only once); without, after a snapshot of the
 * conversation. Frames seen before the run is known are kept and looked at again once it is. A snapshot
 * that answers a reconnect's re-open (its `request_id` starts with {@link RESYNC_REQUEST_PREFIX}) is
 * emitted when it concerns the run, and ends the run when it is over: neither active nor queued there
 * although it had started, was queued, or its user message (`clientMessageId`) is in the history.
 */
export class RunFrames {
  private runId: string | undefined;
  private queued = false;
  private started = false;
  private readonly questions = new Set<string>();
  private early: ServerMessage[] = [];
  /** The run finished (or is known to be over): nothing more is emitted. */
  finished = false;

  constructor(
    private readonly conversationId: string,
    private readonly sendId: string,
    private readonly clientMessageId: string | undefined,
  ) {}

  /** A frame delivered to handlers; returns what to emit now. */
  take(message: ServerMessage): ServerMessage[] {
    if (this.finished) return [];
    if (this.runId === undefined) {
      if (
        (message.type === "run.accepted" || message.type === "run.queued") &&
        message.request_id === this.sendId
      )
        return this.learn(message);
      this.early.push(message);
      return [];
    }
    return this.step(message);
  }

  /** The reply to the `chat.send` (from the request, when the handlers did not see it); returns what to emit now. */
  learn(reply: ServerMessageOf<"run.accepted"> | ServerMessageOf<"run.queued">): ServerMessage[] {
    if (this.runId !== undefined || this.finished) return [];
    this.runId = reply.run_id;
    if (reply.type === "run.queued") this.queued = true;
    const early = this.early;
    this.early = [];
    return [...early.flatMap((m) => this.step(m)), ...this.step(reply)];
  }

  private step(message: ServerMessage): ServerMessage[] {
    if (this.finished) return [];
    let mine: boolean;
    switch (message.type) {
      case "run.queued":
        mine = message.run_id === this.runId && !this.started;
        break;
      case "run.accepted":
        mine = message.run_id === this.runId && !this.started;
        if (mine) this.started = true;
        break;
      case "run.finished":
        mine = message.run_id === this.runId;
        if (mine) this.finished = true;
        break;
      case "conversation.history":
        mine =
          message.conversation_id === this.conversationId &&
          message.request_id?.startsWith(RESYNC_REQUEST_PREFIX) === true &&
          this.snapshot(message);
        break;
      case "queue.changed":
        mine = message.conversation_id === this.conversationId && !this.started && this.queued;
        break;
      default:
        mine = this.started && this.duringRun(message);
    }
    return mine ? [message] : [];
  }

  /**
   * A reconnect's snapshot: the run is active there (it goes on), queued (it waits), or over; emitted
   * then. Otherwise the send was not handled yet when it was taken (it was made, or its connection
   * dropped, before it reached the server), so it says nothing of the run: its retry starts the run after it.
   */
  private snapshot(history: ServerMessageOf<"conversation.history">): boolean {
    if (history.run?.run_id === this.runId) this.started = true;
    else if ((history.queue ?? []).some((q) => q.run_id === this.runId)) {
      // It waits.
    } else if (
      this.started ||
      this.queued ||
      (this.clientMessageId !== undefined &&
        history.messages.some((m) => m.client_message_id === this.clientMessageId))
    )
      // Not there: over, if it was ever there.
      this.finished = true;
    else return false;
    return true;
  }

  private duringRun(message: ServerMessage): boolean {
    switch (message.type) {
      case "message.start":
      case "thought.delta":
      case "thought.complete":
      case "plan.updated":
        return message.run_id === this.runId;
      // One run at a time per conversation: its messages (notices included) are this run's.
      case "tool.event":
      case "message.delta":
      case "message.complete":
      case "attachment.added":
      case "usage.updated":
        return message.conversation_id === this.conversationId;
      case "approval.request":
        if (message.conversation_id !== this.conversationId) return false;
        this.questions.add(message.approval_id);
        return true;
      case "clarify.request":
        if (message.conversation_id !== this.conversationId) return false;
        this.questions.add(message.clarify_id);
        return true;
      case "approval.resolved":
        return this.questions.has(message.approval_id);
      case "clarify.resolved":
        return this.questions.has(message.clarify_id);
      default:
        return false;
    }
  }
}
