import { FEATURE_INBOX } from "@pheby/protocol";
import { readerOf } from "../auth/principal.js";
import type { ConnectionExtension } from "../connection/extension.js";
import type { ServerContext } from "../handlers/context.js";

/**
 * `inbox`: the `conversation.created` reply carries the new conversation's list state for the
 * requester's reader (the broadcast `conversation.updated` gets each reader's from the Inbox).
 */
export function inboxExtension(ctx: ServerContext): ConnectionExtension {
  return {
    feature: FEATURE_INBOX,
    replyFields: (connection, reply) => {
      if (reply.type !== "conversation.created") return undefined;
      const conv = ctx.store.getConversation(reply.conversation_id);
      const reader = readerOf(connection.principal);
      return conv && reader !== null ? { ...ctx.inbox.fields(conv, reader) } : undefined;
    },
  };
}
