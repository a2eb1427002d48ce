import { LIMITS } from "@pheby/protocol";
import { withPlacement } from "../agents/fields.js";
import { eventOf, type Outbox } from "../outbox/outbox.js";
import type { Store } from "../store/store.js";

/** The agent renamed a session: follow it unless the user chose a name, and tell every client. */
export function applySessionTitle(
  store: Store,
  outbox: Outbox,
  agentId: string,
  sessionId: string,
  title: string,
): void {
  const conv = store.conversationBySession(sessionId, agentId);
  const name = title.trim().slice(0, LIMITS.conversationNameChars);
  if (!conv || conv.user_renamed || name === "" || name === conv.name) return;
  store.renameConversation(conv.id, name, false);
  outbox.publish(
    withPlacement(eventOf({ type: "conversation.updated", conversation_id: conv.id, name }), conv),
  );
}
