/**
 * A conversation's own git worktree (`conversation.create` with `worktree: true`): a new branch
 * `pheby/<first 8 characters of the conversation id>` (then `-2`, `-3`… while the name is taken)
 * from the workspace's `HEAD` commit (a detached `HEAD` too), checked out in the conversation's
 * directory of the worktrees directory. Every git command goes through the hardened runner.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { spawnAs } from "../agent-user/spawn.js";
import { GitFailedError } from "../git/errors.js";
import { type WorktreeContext, worktreeRoot } from "./layout.js";

/** A checkout makes as many files as the repository has: give it longer than a query. */
const CHECKOUT_TIMEOUT_MS = 120_000;
/** Prefix of every branch Pheby makes. */
export const BRANCH_PREFIX = "pheby/";

/** Why a worktree cannot be made; the message is for a client (it names no path). */
export class WorktreeError extends Error {
  constructor(
    /** `not_git`: the workspace is in no git repository; `no_commit`: its repository has no commit yet. */
    readonly code: "not_git" | "no_commit",
    message: string,
  ) {
    super(message);
    this.name = "WorktreeError";
  }
}

/** A worktree made for a conversation. Its paths are the server's: never on the wire. */
export interface CreatedWorktree {
  /** The worktree's top directory (the conversation's path base). */
  root: string;
  /** The session's working directory: the workspace's folder inside the worktree (`root` for a repository's top). */
  cwd: string;
  /** The new branch, e.g. `pheby/3f2a9c1e` (what `branch` of a conversation entry shows). */
  branch: string;
  /** The commit it started from. */
  commit: string;
}

/** The branch names `refs` (full ref names, one a line) leave free: `name`, else `name-2`, `name-3`… */
export function freeBranchName(name: string, refs: readonly string[]): string {
  const taken = (candidate: string) => {
    const ref = `refs/heads/${candidate}`;
    // A branch `pheby/x/y` keeps `pheby/x` from being made too (a ref is a file, its prefix a directory).
    return refs.some((r) => r === ref || r.startsWith(`${ref}/`));
  };
  if (!taken(name)) return name;
  for (let n = 2; ; n++) if (!taken(`${name}-${n}`)) return `${name}-${n}`;
}

/**
 * Make `conversationId`'s worktree of the workspace at `workspacePath` (see the module comment).
 * For a workspace that is a folder of its repository, the session's `cwd` is the same folder in
 * the worktree (made when the commit does not have it).
 * @throws WorktreeError `not_git` / `no_commit`: the handler's `bad_request` naming `worktree`.
 * @throws GitFailedError / GitTimeoutError when git fails otherwise (an `internal_error`).
 */
export async function createWorktree(
  ctx: WorktreeContext,
  workspacePath: string,
  conversationId: string,
): Promise<CreatedWorktree> {
  const root = worktreeRoot(ctx.worktreesDir, conversationId);
  const run = (args: string[], okCodes?: number[]) =>
    ctx.git.run(args, {
      cwd: workspacePath,
      ...(okCodes ? { okCodes } : {}),
      ...(ctx.user ? { user: ctx.user } : {}),
    });
  let prefix: string;
  try {
    prefix = (await run(["rev-parse", "--show-prefix"])).stdout.toString("utf8").trim();
  } catch (err) {
    if (err instanceof GitFailedError && /not a git repository/i.test(err.stderr))
      throw new WorktreeError("not_git", "the workspace is not in a git repository");
    throw err;
  }
  // `HEAD^{commit}` is the commit of a branch's tip or of a detached HEAD; an unborn branch has none.
  const head = await run(["rev-parse", "--verify", "--quiet", "--end-of-options", "HEAD^{commit}"], [0, 1]);
  const commit = head.stdout.toString("utf8").trim();
  if (head.code !== 0 || commit === "")
    throw new WorktreeError("no_commit", "the workspace's git repository has no commit yet");
  const refs = (await run(["for-each-ref", "--format=%(refname)", `refs/heads/${BRANCH_PREFIX}`])).stdout
    .toString("utf8")
    .split("\n")
    .filter(Boolean);
  const branch = freeBranchName(`${BRANCH_PREFIX}${conversationId.slice(0, 8)}`, refs);
  await ctx.git.run(["worktree", "add", "--quiet", "-b", branch, root, commit], {
    cwd: workspacePath,
    timeoutMs: CHECKOUT_TIMEOUT_MS,
    ...(ctx.user ? { user: ctx.user } : {}),
  });
  const cwd = prefix === "" ? root : resolve(root, prefix); // (without the prefix's trailing `/`)
  if (!existsSync(cwd)) makeDirs(root, prefix, ctx.user);
  return { root, cwd, branch, commit };
}

/**
 * Make the folders of `prefix` under `root` (a folder the commit does not track), as the user git
 * ran as: with an agent user, `mkdir` runs as that user with its umask, like git did (Pheby's root
 * has no CAP_CHOWN under the documented unit).
 */
function makeDirs(root: string, prefix: string, user: WorktreeContext["user"]) {
  const dir = resolve(root, prefix);
  if (!user) return mkdirSync(dir, { recursive: true });
  const as = spawnAs(["mkdir", "-p", "--", dir], user);
  execFileSync(as.file, as.args, {
    uid: as.uid,
    gid: as.gid,
    stdio: "ignore",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
}
