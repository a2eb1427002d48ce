/**
 * How the agent is started as another OS user. Node's `spawn` switches uid and gid in the child
 * (libuv also drops every supplementary group there: the agent has its primary group only). The
 * umask is set by a `/bin/sh` that then `exec`s the agent: the agent keeps the pid Pheby spawned,
 * so it still leads the process group Pheby signals. (Changing Pheby's own umask around `spawn`
 * would also apply to files Pheby's thread pool creates meanwhile.)
 */
import type { OsUser } from "./lookup.js";

/** The agent's umask: what it creates is readable and writable by the group it shares with Pheby. */
export const AGENT_UMASK = "0007";
const WRAPPER = `umask ${AGENT_UMASK}; exec "$@"`;

/** The `spawn` file, args and ids that run `command` as `user` with {@link AGENT_UMASK}. */
export function spawnAs(
  command: readonly string[],
  user: Pick<OsUser, "uid" | "gid">,
): { file: string; args: string[]; uid: number; gid: number } {
  // `$0` of the shell names it in `ps` until the exec.
  return { file: "/bin/sh", args: ["-c", WRAPPER, "pheby-agent", ...command], uid: user.uid, gid: user.gid };
}

/** The login variables of `user`, which the agent's tools read to find its home. */
export function loginEnv(user: OsUser): Record<string, string> {
  return { HOME: user.home, USER: user.name, LOGNAME: user.name };
}
