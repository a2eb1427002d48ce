import type { ServerMessage, ServerMessageOf } from "@pheby/protocol";

/**
 * The frames of one run, in order, as the protocol ties them to it: those naming its `run_id`
 * (`run.accepted` included), the `message.delta`/`message.complete` of the message its
 * `message.start` named, and the notices (`message.complete` of kind `notice`) in its conversation
 * between its `message.start` and its `run.finished`, since a conversation runs one run at a time.
 * Message ids are followed as `message.start` names them, never guessed from the run id.
 * `accepted: false` leaves out `run.accepted`.
 */
export function runFrames(
  frames: readonly ServerMessage[],
  runId: string,
  opts: { accepted?: boolean } = {},
): ServerMessage[] {
  const accepted = opts.accepted ?? true;
  let messageId: string | undefined;
  let conversationId: string | undefined;
  let finished = false;
  return frames.filter((m) => {
    if ((m as { run_id?: string }).run_id === runId) {
      if (m.type === "message.start") {
        messageId = m.message_id;
        conversationId = m.conversation_id;
      }
      if (m.type === "run.finished") finished = true;
      return accepted || m.type !== "run.accepted";
    }
    if (m.type !== "message.delta" && m.type !== "message.complete") return false;
    if (messageId !== undefined && m.message_id === messageId) return true;
    return (
      m.type === "message.complete" &&
      m.kind === "notice" &&
      messageId !== undefined &&
      !finished &&
      m.conversation_id === conversationId
    );
  });
}

/** The `message_id` the run's `message.start` names, once it arrived. */
export function messageIdOf(frames: readonly ServerMessage[], runId: string): string | undefined {
  const start = frames.find((m) => m.type === "message.start" && m.run_id === runId);
  return start?.type === "message.start" ? start.message_id : undefined;
}

/** The run's answer: the `message.complete` of the message its `message.start` named, once it arrived. */
export function answerOf(
  frames: readonly ServerMessage[],
  runId: string,
): ServerMessageOf<"message.complete"> | undefined {
  const messageId = messageIdOf(frames, runId);
  if (messageId === undefined) return undefined;
  const complete = frames.find((m) => m.type === "message.complete" && m.message_id === messageId);
  return complete?.type === "message.complete" ? complete : undefined;
}
