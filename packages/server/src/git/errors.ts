/**
 * What the hardened git runner throws. Neither message is for a client: stderr names server paths.
 * The callers map them to the protocol's errors (a timeout is `internal_error` "git did not answer in time").
 */

/** Git did not finish within the runner's timeout; the child was killed. */
export class GitTimeoutError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly timeoutMs: number,
  ) {
    super(`git ${args[0] ?? ""} did not answer within ${timeoutMs} ms`);
    this.name = "GitTimeoutError";
  }
}

/** Git exited with a code the caller did not expect, or could not be started (`code` null, e.g. not installed). */
export class GitFailedError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly code: number | null,
    /** Git's stderr (bounded); server paths in it: log it, never send it. */
    readonly stderr: string,
  ) {
    super(
      `git ${args[0] ?? ""} failed (${code === null ? "not started" : `exit ${code}`}): ${stderr.trim().split("\n")[0] ?? ""}`,
    );
    this.name = "GitFailedError";
  }
}
