import type { OsUser } from "../../agent-user/lookup.js";

/** Options of {@link createAcpBackend}. */
export interface AcpBackendOptions {
  /** The agent's argv, e.g. `["hermes", "acp"]` or `["qwen", "--acp"]`. */
  command: string[];
  /** Working directory of the agent process and of every session. Must be absolute. */
  cwd: string;
  /**
   * Run the agent as this OS user (its uid and primary gid, umask 0007, its HOME/USER/LOGNAME unless
   * `env` sets them), so it cannot read Pheby's secret, database or environment. Pheby must run as
   * root for that (docs/deployment.md). Absent: the agent runs as Pheby's own user.
   */
  user?: OsUser;
  /** Extra environment for the agent. `PHEBY_*` variables of this process are never inherited. */
  env?: Record<string, string>;
  /** Host directories the agent may deliver files from (`MEDIA:` lines, `file://` links). */
  allowedFileRoots: string[];
  /** Session mode to put new and resumed sessions in (e.g. `"default"` so Qwen Code asks permission). */
  mode?: string;
  /** A control request (session/new, set_config_option, …) unanswered this long means the agent hung. Default 30 s. */
  requestTimeoutMs?: number;
  /** How long the agent may take to answer `initialize` after spawning. Default 60 s (Python agents boot slowly). */
  startTimeoutMs?: number;
  /**
   * After `session/cancel`, how long the turn may take to stop before it is given up: the
   * conversation's next turn continues in a new session, and the agent is restarted (ending the
   * turn) as soon as no other conversation's turn runs in it. Default 5 s.
   */
  cancelTimeoutMs?: number;
  /** On close, how long the agent gets to exit before SIGKILL. Default 5 s. */
  shutdownTimeoutMs?: number;
  /** First respawn delay after a crash; doubles per consecutive crash, up to 5 s. Default 1 s. */
  respawnBackoffMs?: number;
  /** Output outside any turn is gathered this long before it is pushed as one message. Default 300 ms. */
  unsolicitedFlushMs?: number;
}
