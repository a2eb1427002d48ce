import { type PhebyClient, PhebyError } from "@pheby/client";
import { FEATURE_INBOX } from "@pheby/protocol";

const HEX32 = /^[0-9a-f]{32}$/;

/** True when `arg` looks like a conversation or attachment ID (32 lowercase hex). */
export function isId(arg: string): boolean {
  return HEX32.test(arg);
}

/**
 * A conversation ID from a command-line argument: an ID as is, otherwise the
 * one conversation whose name is exactly `arg`, archived or not.
 */
export async function resolveConversation(client: PhebyClient, arg: string): Promise<string> {
  if (isId(arg)) return arg;
  // An `inbox` list leaves archived conversations out unless asked for them alone.
  const conversations = [
    ...(await client.listConversations()),
    ...(client.features.includes(FEATURE_INBOX) ? await client.listConversations({ archived: true }) : []),
  ];
  const matches = conversations.filter((c) => c.name === arg);
  if (matches.length === 1) return matches[0]!.conversation_id;
  if (matches.length === 0) throw new PhebyError("conversation_not_found", `no conversation named "${arg}"`);
  throw new PhebyError("bad_request", `${matches.length} conversations are named "${arg}"; use its ID`);
}
