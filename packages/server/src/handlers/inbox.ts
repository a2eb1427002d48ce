import { LIMITS, type SearchResult } from "@pheby/protocol";
import { readerOf } from "../auth/principal.js";
import { shorten } from "../conversations/inbox.js";
import { ProtocolError } from "../errors.js";
import { iso } from "../util/time.js";
import {
  coreReply,
  type HandlerTable,
  type Request,
  requireConversation,
  type ServerContext,
} from "./context.js";

/** The requesting peer's reader (every authenticated peer has one). */
function readerOfPeer(req: Request<"conversation.read">): string {
  const reader = readerOf(req.peer.principal);
  if (reader === null) throw new ProtocolError("unauthorized", "not authenticated");
  return reader;
}

/** `message_id` "m<row id>" of this conversation, or `bad_request`. */
function messageRow(ctx: ServerContext, conversationId: string, messageId: string): number {
  const match = /^m([1-9]\d{0,15})$/.exec(messageId);
  const id = match ? Number(match[1]) : Number.NaN;
  if (!Number.isSafeInteger(id) || !ctx.store.hasMessage(conversationId, id)) {
    throw new ProtocolError("bad_request", "message_id is not a message of this conversation");
  }
  return id;
}

/** A snippet as a list shows it: one line of plain text, at most 200 characters. */
function snippet(text: string): string {
  return shorten(text.replace(/\s+/g, " ").trim(), LIMITS.searchSnippetChars);
}

/** conversation.read / archive / search (the `inbox` extension). */
export const inboxHandlers: HandlerTable = {
  // The reply is the reader's conversation.status, which its other inbox connections get too.
  "conversation.read": (ctx, req) => {
    const { conversation_id: id, message_id } = req.msg;
    requireConversation(ctx, id);
    const reader = readerOfPeer(req);
    const upTo = message_id === undefined ? undefined : messageRow(ctx, id, message_id);
    ctx.store.inbox.markRead(reader, id, upTo);
    const answer = coreReply(req, "broadcast");
    ctx.inbox.changed(id, {
      force: true,
      replyTo: answer.origin,
      to: (peer) => readerOf(peer.principal) === reader,
    });
    return answer;
  },

  // The reply is conversation.status, which every other inbox connection gets too (each its unread).
  "conversation.archive": (ctx, req) => {
    const { conversation_id: id, archived } = req.msg;
    requireConversation(ctx, id);
    ctx.store.inbox.setArchived(id, archived);
    const answer = coreReply(req, "broadcast");
    ctx.inbox.changed(id, { force: true, replyTo: answer.origin });
    return answer;
  },

  "conversation.search": (ctx, req) => {
    const { query, limit = LIMITS.searchResultsDefault } = req.msg;
    const results: SearchResult[] = ctx.store.inbox.search(query, limit).map((hit) => ({
      conversation_id: hit.conversation_id,
      message_id: `m${hit.id}`,
      snippet: snippet(hit.snippet),
      ts: hit.ts === null ? null : iso(hit.ts),
    }));
    return { rule: "requester", reply: { type: "conversation.results", query, results } };
  },
};
