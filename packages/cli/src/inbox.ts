// The `inbox` extension on the command line: the status and unread columns of `pheby conversations`
// (the row itself, with the workspaces extension's place) and the check that the server enabled it
// before a command relies on it.
import type { ConversationEntry, PhebyClient } from "@pheby/client";
import { CONVERSATION_STATUSES, type ConversationStatusValue, FEATURE_INBOX } from "@pheby/protocol";
import { UsageError } from "./exit.js";
import { requireFeature } from "./features.js";
import { placeOf } from "./workspaces.js";

/** Throws unless the server enabled `inbox` on this connection (`what` names the flag or command). */
export function requireInbox(client: PhebyClient, what: string): void {
  requireFeature(client, FEATURE_INBOX, what);
}

/** The `--status` flag's value, checked against the statuses a list shows. */
export function statusFlag(
  raw: string | boolean | string[] | undefined,
): ConversationStatusValue | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || !(CONVERSATION_STATUSES as readonly string[]).includes(raw))
    throw new UsageError(`--status must be one of ${CONVERSATION_STATUSES.join(", ")}`);
  return raw as ConversationStatusValue;
}

/**
 * A list row's status as shown: a status this CLI does not know (a newer server's) is `idle`, as
 * docs/protocol.md asks.
 */
export function shownStatus(entry: ConversationEntry): ConversationStatusValue | undefined {
  if (entry.status === undefined) return undefined;
  return (CONVERSATION_STATUSES as readonly string[]).includes(entry.status) ? entry.status : "idle";
}

/**
 * One line of `pheby conversations`: ID, status and unread count (with `inbox`), last activity, where
 * it runs (with `workspaces`: agent, workspace, branch), name.
 */
export function conversationLine(entry: ConversationEntry): string {
  const status = shownStatus(entry);
  const inbox = status === undefined ? "" : `${status.padEnd(7)}  ${String(entry.unread ?? 0).padStart(3)}  `;
  const place = placeOf(entry);
  return `${entry.conversation_id}  ${inbox}${entry.last_active ?? "-".padEnd(24)}  ${place ? `${place}  ` : ""}${entry.name}`;
}
