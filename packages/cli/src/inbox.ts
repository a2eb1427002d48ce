// The `inbox` extension on the command line: the status and unread columns of `pheby conversations`
// and the check that the server enabled it before a command relies on it.
import { type ConversationEntry, type PhebyClient, PhebyError } from "@pheby/client";
import { CONVERSATION_STATUSES, type ConversationStatusValue, FEATURE_INBOX } from "@pheby/protocol";
import { UsageError } from "./exit.js";

/** Throws unless the server enabled `inbox` on this connection (`what` names the flag or command). */
export function requireInbox(client: PhebyClient, what: string): void {
  if (!client.features.includes(FEATURE_INBOX))
    throw new PhebyError(
      "unknown_type",
      `${what} needs the server's inbox extension, which it did not enable`,
    );
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

/** One line of `pheby conversations`: ID, status and unread count (with `inbox`), last activity, name. */
export function conversationLine(entry: ConversationEntry): string {
  const status = shownStatus(entry);
  const inbox = status === undefined ? "" : `${status.padEnd(7)}  ${String(entry.unread ?? 0).padStart(3)}  `;
  return `${entry.conversation_id}  ${inbox}${entry.last_active ?? "-".padEnd(24)}  ${entry.name}`;
}
