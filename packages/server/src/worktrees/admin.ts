/**
 * `pheby-server worktrees [--prune]`: the worktrees left behind (a conversation deleted while its
 * worktree held changes, a crash between the two), each with its conversation's state in the data
 * directory, and pruning the clean ones whose conversation is gone. Works with the server stopped
 * or running (SQLite WAL; git's own locks keep a worktree from being removed twice).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { GitRunner } from "../git/runner.js";
import { DB_FILE, Store } from "../store/store.js";
import { listWorktrees, removeWorktree, type WorktreeEntry } from "./remove.js";

/** A worktree and whether its conversation still exists. */
export interface WorktreeSummary extends WorktreeEntry {
  /** `live`: the conversation exists; `deleted`: it was deleted; `unknown`: this data directory never had it. */
  conversation: "live" | "deleted" | "unknown";
}

/** What pruning did to one worktree. */
export type PruneOutcome =
  | "removed"
  | "kept: uncommitted changes"
  | "kept: conversation exists"
  | "kept: broken";

/** The worktrees of one data directory, for the operator command (see {@link openWorktreeAdmin}). */
export interface WorktreeAdmin {
  list(): Promise<WorktreeSummary[]>;
  /**
   * Remove every clean worktree whose conversation no longer exists (branches are kept), telling
   * `progress` about each worktree as it goes; returns how many were removed.
   */
  prune(progress: (worktree: WorktreeSummary, outcome: PruneOutcome) => void): Promise<number>;
  close(): void;
}

/**
 * Open the worktrees of `worktreesDir` against the conversations of `dataDir`, or undefined when
 * the data directory holds no database (a wrong `PHEBY_DATA_DIR` must not create an empty one, nor
 * make every worktree look abandoned).
 */
export function openWorktreeAdmin(
  dataDir: string,
  worktreesDir: string,
  git: GitRunner = new GitRunner(),
): WorktreeAdmin | undefined {
  if (!existsSync(join(dataDir, DB_FILE))) return undefined;
  const store = new Store(dataDir);
  const ctx = { git, worktreesDir };
  const list = async (): Promise<WorktreeSummary[]> =>
    (await listWorktrees(ctx)).map((entry) => ({
      ...entry,
      conversation: store.getConversation(entry.conversationId)
        ? "live"
        : store.conversationExisted(entry.conversationId)
          ? "deleted"
          : "unknown",
    }));
  return {
    list,
    async prune(progress) {
      let removed = 0;
      for (const worktree of await list()) {
        let outcome: PruneOutcome;
        if (worktree.conversation === "live") outcome = "kept: conversation exists";
        else if (worktree.state === "broken") outcome = "kept: broken";
        else if (worktree.state === "dirty") outcome = "kept: uncommitted changes";
        else {
          const result = await removeWorktree(ctx, worktree.conversationId);
          outcome =
            result.status === "removed" || result.status === "absent"
              ? "removed"
              : result.status === "dirty"
                ? "kept: uncommitted changes"
                : "kept: broken";
        }
        if (outcome === "removed") removed++;
        progress(worktree, outcome);
      }
      return removed;
    },
    close: () => store.close(),
  };
}
