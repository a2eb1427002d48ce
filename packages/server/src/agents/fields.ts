/**
 * The fields the `workspaces` extension adds to every conversation entry (`conversation.snapshot`'s
 * entries, `conversation.created`, `conversation.updated`): never a path, only ids and the branch.
 */
import { FEATURE_WORKSPACES } from "@pheby/protocol";
import type { OutboxEvent } from "../outbox/outbox.js";
import type { ConversationRow } from "../store/store.js";
import { DEFAULT_ID } from "./config.js";

export { FEATURE_WORKSPACES };

/** A conversation entry's `workspaces` fields. */
export type PlacementFields = {
  agent_id: string;
  workspace_id: string;
  branch: string | null;
};

/** The `workspaces` fields of a conversation (a row not yet claimed counts as the default's). */
export function placementFields(conv: ConversationRow): PlacementFields {
  return {
    agent_id: conv.agent_id ?? DEFAULT_ID,
    workspace_id: conv.workspace_id ?? DEFAULT_ID,
    branch: conv.branch,
  };
}

/** `event` with the conversation's `workspaces` fields for the connections that enabled it. */
export function withPlacement(event: OutboxEvent, conv: ConversationRow | undefined): OutboxEvent {
  if (!conv) return event;
  return { ...event, fields: { ...event.fields, [FEATURE_WORKSPACES]: placementFields(conv) } };
}
