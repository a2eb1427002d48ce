/**
 * Where conversations' worktrees live: one directory per conversation, named by its id, in the
 * worktrees directory (outside the data directory, which stays 0700). With an agent user the
 * directory is shared like the agent's shared directory (group-owned, setgid, 0770), so that git,
 * run as that user, can make a conversation's worktree in it.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { sharedDir } from "../agent-user/shared-dir.js";
import type { GitRunner } from "../git/runner.js";

/** What every worktree function works with: the runner, the worktrees directory, the agent's user. */
export interface WorktreeContext {
  /** The hardened runner every git command goes through. */
  git: GitRunner;
  /** The worktrees directory (see `prepareWorktreesDir`). */
  worktreesDir: string;
  /**
   * The OS user the conversation's agent runs as (uid and primary gid): git runs as that user, so
   * the worktree, its branch and its administrative files in the workspace's `.git` are the agent's
   * to go on writing. Absent: Pheby's own user. (Removing and listing run git as each worktree's
   * owner instead.)
   */
  user?: { uid: number; gid: number };
}

/**
 * Conversation ids Pheby names worktree directories and branches by: its own (32 hex), never a
 * client's string. Anything else is refused before it becomes a path.
 */
const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The directory of `conversationId`'s worktree. Throws on an id that is not a plain name. */
export function worktreeRoot(worktreesDir: string, conversationId: string): string {
  if (!CONVERSATION_ID.test(conversationId))
    throw new Error("a worktree is named by a conversation id of letters, digits, - and _");
  return join(worktreesDir, conversationId);
}

/** The id of the conversation a worktree directory belongs to, or null for anything else in it. */
export function conversationOfEntry(name: string): string | null {
  return CONVERSATION_ID.test(name) ? name : null;
}

/**
 * Create the worktrees directory `dir` (parents as needed) at start; returns it. With `gid` (an
 * agent user's group) it is shared with that group like the agent's shared directory (setgid,
 * 0770), else private to Pheby (0700). Throws (EPERM) when Pheby may not give it that group.
 */
export function prepareWorktreesDir(dir: string, gid?: number): string {
  if (gid !== undefined) return sharedDir(dir, gid);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
