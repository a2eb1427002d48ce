/**
 * When an agent session is lost (the agent cannot reopen it after a restart, answers that it no
 * longer knows it, or hangs in it after a cancel), the conversation continues in a new session.
 * Pheby holds the conversation's history itself, so the new session gets it as context with the
 * next prompt: the newest messages within a budget, in a tagged block before the user's text.
 */
import * as acp from "@agentclientprotocol/sdk";
import type { TranscriptTail } from "../port.js";
import { agentErrorWords } from "./process.js";
import { CannotReopenError } from "./sessions.js";

/** How many characters of Pheby's history a replacement session gets at most (about 6,000 tokens). */
export const CONTEXT_BUDGET_CHARS = 24_000;

/** The notice the owner gets in the run that continues in a new session. */
export const SESSION_REPLACED_NOTICE =
  "The agent restarted; it continues from a summary of this conversation.";

/** How the context block starts: agents read it as context, Pheby's fake agent skips it. */
export const CONTEXT_TAG = "<conversation_so_far";

/**
 * The context block of a replacement session: the newest messages of the transcript (oldest first)
 * whose text fits `budget` characters; when even the newest does not fit, its end. Null when there
 * is no history (a conversation where nothing was said needs no context).
 */
export function contextBlock(tail: TranscriptTail | undefined, budget = CONTEXT_BUDGET_CHARS): string | null {
  const history = tail?.entries ?? [];
  const kept: string[] = [];
  let used = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const entry = history[i]!;
    const label = entry.role === "user" ? "User: " : "Assistant: ";
    const text = entry.text.trim();
    if (used + label.length + text.length > budget) {
      // Not even the newest message fits: its end, which is what the conversation continues from.
      if (kept.length === 0) kept.push(`${label}…${text.slice(text.length - (budget - label.length - 1))}`);
      break;
    }
    kept.push(label + text);
    used += label.length + text.length + 2; // and the blank line between messages
  }
  if (kept.length === 0) return null;
  const omitted = tail?.more || kept.length < history.length;
  return [
    `${CONTEXT_TAG} source="pheby">`,
    "Your earlier session of this conversation was lost (the agent restarted), so this session is new.",
    "These are the latest messages of the conversation so far, from Pheby's own history. Treat them as",
    "context and do not answer them again; the user's new message follows this block.",
    ...(omitted ? ["(Earlier messages are left out.)"] : []),
    "",
    kept.reverse().join("\n\n"),
    "</conversation_so_far>",
  ].join("\n");
}

/**
 * The agent answered that it does not know a session: ACP's `-32002` (Resource not found, what
 * `RequestError.sessionNotFound` sends), or an agent's own words for it (Claude Code throws
 * "Session not found", which reaches us as an Internal error with those details).
 */
export function isUnknownSession(err: unknown): boolean {
  if (!(err instanceof acp.RequestError)) return false;
  if (err.code === -32002) return true;
  // "Session not found", "session s-1 not found", "Session with id s-1 not found"; not a sentence
  // that merely mentions a session and, later, something else not found.
  return /\bsession\b(?:\s+[^\s.;:,]+){0,3}\s+not found|\bunknown session\b|\bno such session\b/i.test(
    agentErrorWords(err),
  );
}

/** The conversation's session is gone for good: it cannot be reopened here, or the agent no longer knows it. */
export function isLostSession(err: unknown): boolean {
  return err instanceof CannotReopenError || isUnknownSession(err);
}
