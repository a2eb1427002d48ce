/**
 * What Pheby and an agent running as another OS user both reach (the MCP socket's directory, the
 * copies of uploads the agent reads): directories owned by Pheby, of the agent's group, setgid (so
 * what is created inside keeps that group) and 0770 (nobody else gets in). Pheby's own files (its
 * secret, database, VAPID key) stay in its 0700 data directory, out of the agent's reach.
 */
import { chmodSync, chownSync, mkdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";

/** Where the agent runs as another user: the directory both reach, and the group they share. */
export interface AgentShare {
  dir: string;
  gid: number;
}

/** Mode of a shared directory: setgid, rwx for Pheby and the agent's group, nothing for others. */
export const SHARED_DIR_MODE = 0o2770;
/** Mode of a file Pheby puts there for the agent to read. */
export const SHARED_FILE_MODE = 0o640;

/**
 * Create `dir` (parents as needed) as a shared directory of group `gid`, fixing the group and mode
 * of an existing one; returns `dir`. Throws (EPERM) when Pheby may not give it that group.
 */
export function sharedDir(dir: string, gid: number): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chownSync(dir, -1, gid);
  chmodSync(dir, SHARED_DIR_MODE); // after chown, which clears the setgid bit
  return dir;
}

/**
 * Prepare the shared directory `share.dir` and the two Pheby fills: `mcp/` (its MCP socket) and
 * `uploads/` (copies of the uploads the agent reads). Throws when it lies inside the data
 * directory, which stays 0700: the agent could not enter it.
 */
export function prepareShare(share: AgentShare, dataDir: string): { mcp: AgentShare; uploads: AgentShare } {
  const dir = resolve(share.dir);
  if (!relative(resolve(dataDir), dir).startsWith("..")) {
    throw new Error("the agent's shared directory must not lie inside the data directory");
  }
  sharedDir(dir, share.gid);
  const sub = (name: string) => ({ dir: sharedDir(join(dir, name), share.gid), gid: share.gid });
  return { mcp: sub("mcp"), uploads: sub("uploads") };
}
