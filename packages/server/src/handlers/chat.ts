import { FEATURE_QUEUE } from "@pheby/protocol";
import { deviceIdOf } from "../auth/principal.js";
import { conversationNotFound } from "../errors.js";
import {
  coreReply,
  type HandlerTable,
  type Request,
  requireAuthorized,
  requireConversation,
  type ServerContext,
} from "./context.js";
import { type Handled, once } from "./idempotent.js";

/**
 * Start the run of a `chat.send`, or queue it (`queue: true` while a run is
 * active, `queue` connections only: the decoder drops the field for others).
 */
async function accept(ctx: ServerContext, req: Request<"chat.send">): Promise<Handled> {
  const { conversation_id, text, queue, client_message_id } = req.msg;
  // A live turn must not interleave with a history replay of the same session.
  await ctx.history.idle(conversation_id);
  requireAuthorized(ctx, req.peer); // revoked while it waited: start nothing
  const conv = requireConversation(ctx, conversation_id);
  const ids = req.msg.attachment_ids ?? [];
  if (queue === true && ctx.runs.busy(conv.id)) {
    const { queued, changed } = ctx.queue.enqueue(conv, {
      text,
      clientMessageId: client_message_id,
      attachmentIds: ids,
      deviceId: deviceIdOf(req.peer.principal),
    });
    return { reply: queued, answer: { rule: "requester", reply: queued, broadcast: changed } };
  }
  // The claim runs inside the transaction that records the user message, after the
  // run_active check: a rejected send claims nothing and leaves the IDs retryable.
  const claim = (messageId: string) => ctx.attachments.claim(conv.id, ids, messageId);
  // The engine publishes run.accepted before the run's message.start: every connection gets it,
  // and the sender's copy is the reply.
  const answer = coreReply(req, "broadcast");
  const runId = ctx.runs.send(conv, text, answer.origin, claim, {
    clientMessageId: client_message_id,
    owner: { deviceId: deviceIdOf(req.peer.principal), autoApprove: true },
  });
  return { reply: { type: "run.accepted", conversation_id: conv.id, run_id: runId }, answer };
}

/** chat.send / run.cancel: thin wrappers over the run engine and the queue. */
export const chatHandlers: HandlerTable = {
  "chat.send": (ctx, req) => {
    const { conversation_id, client_message_id } = req.msg;
    const key =
      client_message_id === undefined
        ? undefined
        : { kind: "chat.send" as const, scope: conversation_id, clientMessageId: client_message_id };
    // A conversation that never existed gets its error without a row: the ids would cost disk and
    // buy nothing (no retry of such a send can ever have another outcome).
    if (key && !ctx.store.conversationExisted(conversation_id)) throw conversationNotFound();
    return once(ctx, req.peer, key, () => accept(ctx, req));
  },

  "run.cancel": (ctx, req) => {
    const { conversation_id, run_id } = req.msg;
    requireConversation(ctx, conversation_id);
    // Only queue connections know queued runs; the cancel is the canceller's own reply.
    const changed = req.peer.features.has(FEATURE_QUEUE)
      ? ctx.queue.cancel(conversation_id, run_id)
      : undefined;
    if (changed) {
      return {
        rule: "requester",
        reply: { type: "run.finished", conversation_id, run_id, status: "cancelled" },
        broadcast: changed,
      };
    }
    // The run's single run.finished (cancelled) is the reply, to everyone, whenever the run ends.
    const answer = coreReply(req, "broadcast_all");
    ctx.runs.cancel(conversation_id, run_id, answer.origin);
    return answer;
  },
};
