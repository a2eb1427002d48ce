import { execFileSync } from "node:child_process";

/**
 * Run plain `git` to set a test's repository up (init, add, commit), isolated from the machine's
 * configuration: no system or global config, `HOME` at the repository, a fixed author. It is for
 * fixtures only: the server under test runs its own, hardened git. Throws when git fails.
 *
 * @param cwd - the directory git runs in.
 * @param args - git's arguments, e.g. `"commit", "-qm", "first"`.
 * @returns git's standard output.
 */
export function fixtureGit(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "T",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "T",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  });
}
