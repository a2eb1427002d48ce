import { FEATURE_WORKSPACES } from "@pheby/protocol";
import { placementFields } from "../agents/fields.js";
import type { ConnectionExtension } from "../connection/extension.js";
import type { ServerContext } from "../handlers/context.js";

/**
 * `workspaces`: the `conversation.created` reply carries the new conversation's agent, workspace and
 * branch (the broadcast `conversation.updated` carries them as extension fields of its event).
 */
export function workspacesExtension(ctx: ServerContext): ConnectionExtension {
  return {
    feature: FEATURE_WORKSPACES,
    replyFields: (_connection, reply) => {
      if (reply.type !== "conversation.created") return undefined;
      const conv = ctx.store.getConversation(reply.conversation_id);
      return conv ? placementFields(conv) : undefined;
    },
  };
}
