/**
 * Taking a conversation's worktree away: only when it holds no uncommitted change (modified,
 * staged or untracked files), so that no work of the agent is lost; its branch is always kept.
 */
import { existsSync, lstatSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { GitFailedError } from "../git/errors.js";
import type { GitRunner } from "../git/runner.js";
import { conversationOfEntry, type WorktreeContext, worktreeRoot } from "./layout.js";

/** What {@link removeWorktree} did. */
export type RemovedWorktree =
  /** The worktree is gone (its branch stays). */
  | { status: "removed"; branch: string | null }
  /** It holds uncommitted changes, so it stays; `pheby-server worktrees` lists it. */
  | { status: "dirty"; branch: string | null }
  /** The conversation has no worktree (it was made without one, or it is gone already). */
  | { status: "absent" }
  /** Its directory is no worktree git can read: left alone (`pheby-server worktrees` lists it). */
  | { status: "broken" };

/** A worktree in the worktrees directory, as {@link listWorktrees} finds it. */
export interface WorktreeEntry {
  conversationId: string;
  /** Its top directory. */
  root: string;
  /** The branch checked out in it (null: detached, or git could not tell). */
  branch: string | null;
  /** `broken`: not a worktree git can read (its repository moved or was deleted, or it is no worktree at all). */
  state: "clean" | "dirty" | "broken";
}

/**
 * Git runs as the worktree's owner when Pheby is root and another user owns it (the agent's user
 * made it): what git writes stays that user's, and the user's repository is not touched as root.
 */
function ownerOf(root: string): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const { uid, gid } = statSync(root);
  return uid === 0 ? undefined : { uid, gid };
}

/** A linked worktree's top has a `.git` *file* (pointing into its repository); a repository's own has a directory. */
const isLinkedWorktree = (root: string) => {
  try {
    return lstatSync(join(root, ".git")).isFile();
  } catch {
    return false;
  }
};

async function inspect(git: GitRunner, conversationId: string, root: string): Promise<WorktreeEntry> {
  const broken: WorktreeEntry = { conversationId, root, branch: null, state: "broken" };
  if (!isLinkedWorktree(root)) return broken;
  const user = ownerOf(root);
  const run = (args: string[]) => git.run(args, { cwd: root, ...(user ? { user } : {}) });
  try {
    const head = (await run(["rev-parse", "--abbrev-ref", "HEAD"])).stdout.toString("utf8").trim();
    const status = await run(["status", "--porcelain=v1", "-z", "--untracked-files=normal"]);
    return {
      conversationId,
      root,
      branch: head === "" || head === "HEAD" ? null : head,
      state: status.stdout.length > 0 ? "dirty" : "clean",
    };
  } catch (err) {
    if (err instanceof GitFailedError) return broken;
    throw err;
  }
}

/**
 * Every conversation's worktree in the worktrees directory (what `pheby-server worktrees` lists), with its
 * branch and whether it holds uncommitted changes. A missing directory holds none.
 */
export async function listWorktrees({ git, worktreesDir }: WorktreeContext): Promise<WorktreeEntry[]> {
  if (!existsSync(worktreesDir)) return [];
  const entries: WorktreeEntry[] = [];
  for (const dirent of readdirSync(worktreesDir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    const conversationId = conversationOfEntry(dirent.name);
    if (!dirent.isDirectory() || conversationId === null) continue;
    entries.push(await inspect(git, conversationId, join(worktreesDir, dirent.name)));
  }
  return entries;
}

/**
 * Remove `conversationId`'s worktree from the worktrees directory when it holds no uncommitted change
 * (ignored files, e.g. build output, go with it); the branch is kept. A directory there that is no
 * worktree git can read is left alone (`pheby-server worktrees` lists it as broken).
 * @throws GitFailedError / GitTimeoutError when git fails.
 */
export async function removeWorktree(
  { git, worktreesDir }: WorktreeContext,
  conversationId: string,
): Promise<RemovedWorktree> {
  const root = worktreeRoot(worktreesDir, conversationId);
  if (!existsSync(root)) return { status: "absent" };
  const entry = await inspect(git, conversationId, root);
  if (entry.state === "broken") return { status: "broken" };
  if (entry.state === "dirty") return { status: "dirty", branch: entry.branch };
  const user = ownerOf(root);
  try {
    // Without --force git checks again that it is clean, so a file written since is not lost either.
    await git.run(["worktree", "remove", root], { cwd: root, ...(user ? { user } : {}) });
  } catch (err) {
    if (err instanceof GitFailedError && /modified or untracked files/.test(err.stderr))
      return { status: "dirty", branch: entry.branch };
    throw err;
  }
  return { status: "removed", branch: entry.branch };
}
