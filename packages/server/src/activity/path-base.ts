/**
 * A conversation's *path base*: the root of the git working tree containing its working directory,
 * else that directory. Paths a client sees are relative to it (docs/security.md).
 */
import { existsSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/**
 * The path base of `cwd`: the nearest directory at or above it holding a `.git` (a directory, or
 * the file a worktree or submodule has), else `cwd` itself; symlinks resolved. It only looks for
 * `.git` and runs no git, so an untrusted repository's configuration is never read.
 */
export function pathBaseOf(cwd: string): string {
  const start = realOrGiven(resolve(cwd));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, ".git"))) return dir;
    if (dirname(dir) === dir) return start;
  }
}

/** The path with symlinks resolved, or as given when it does not exist. */
export function realOrGiven(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Path bases by working directory, each computed once (a conversation's working directory does not move). */
export class PathBases {
  readonly #bases = new Map<string, string>();

  /** The path base of `cwd` ({@link pathBaseOf}), computed on first use. */
  of(cwd: string): string {
    let base = this.#bases.get(cwd);
    if (base === undefined) {
      base = pathBaseOf(cwd);
      this.#bases.set(cwd, base);
    }
    return base;
  }
}
