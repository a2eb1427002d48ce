/**
 * Conversations' own git worktrees (the `workspaces` extension's `worktree: true`): made from the
 * workspace's HEAD on a branch `pheby/<id>`, removed with the conversation when clean, and listed
 * and pruned by `pheby-server worktrees`. Every git command goes through the hardened runner.
 */

export { openWorktreeAdmin, type PruneOutcome, type WorktreeAdmin, type WorktreeSummary } from "./admin.js";
export {
  BRANCH_PREFIX,
  type CreatedWorktree,
  createWorktree,
  freeBranchName,
  WorktreeError,
} from "./create.js";
export { prepareWorktreesDir, type WorktreeContext, worktreeRoot } from "./layout.js";
export { listWorktrees, type RemovedWorktree, removeWorktree, type WorktreeEntry } from "./remove.js";
export { Worktrees } from "./service.js";
