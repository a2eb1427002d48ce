/**
 * The server's side of worktrees: one runner and one worktrees directory, and each agent's OS user
 * (git makes an agent's worktrees as that user). `conversation.create` makes one, `conversation.delete`
 * removes it when clean.
 */
import { GitRunner } from "../git/runner.js";
import { type CreatedWorktree, createWorktree } from "./create.js";
import { type RemovedWorktree, removeWorktree } from "./remove.js";

/** See the file comment. */
export class Worktrees {
  readonly #git: GitRunner;
  readonly #users: ReadonlyMap<string, { uid: number; gid: number }>;

  constructor(
    /** The worktrees directory. */
    readonly dir: string,
    users: ReadonlyMap<string, { uid: number; gid: number }> = new Map(),
    git: GitRunner = new GitRunner(),
  ) {
    this.#users = users;
    this.#git = git;
  }

  /** {@link createWorktree} of `workspacePath` for `conversationId`, as `agentId`'s user. */
  create(agentId: string, workspacePath: string, conversationId: string): Promise<CreatedWorktree> {
    const user = this.#users.get(agentId);
    return createWorktree(
      { git: this.#git, worktreesDir: this.dir, ...(user ? { user } : {}) },
      workspacePath,
      conversationId,
    );
  }

  /** {@link removeWorktree} of `conversationId`'s worktree (as its owner). */
  remove(conversationId: string): Promise<RemovedWorktree> {
    return removeWorktree({ git: this.#git, worktreesDir: this.dir }, conversationId);
  }
}
