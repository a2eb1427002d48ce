/**
 * Resolve an OS user by name (or numeric id) to its uid, gid and home, without a native addon:
 * `getent passwd` asks the system's name service (so LDAP/sssd users resolve too); where there is
 * no `getent`, `/etc/passwd` is read.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** An OS user the agent can run as. */
export interface OsUser {
  name: string;
  uid: number;
  /** The user's primary group: the group Pheby shares with the agent. */
  gid: number;
  home: string;
}

/** The user named `name` (a login name or a numeric uid), or null when the system knows none. */
export function lookupUser(name: string): OsUser | null {
  if (!/^[A-Za-z0-9._][A-Za-z0-9._-]*\$?$/.test(name)) return null; // never an option or a path for getent
  let lines: string[];
  try {
    lines = [
      execFileSync("getent", ["passwd", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }),
    ];
  } catch (err) {
    // Exit code 2: no such user. Only a missing getent falls back to the file.
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") return null;
    lines = readFileSync("/etc/passwd", "utf8").split("\n");
  }
  for (const line of lines) {
    const [login, , uid, gid, , home] = line.trim().split(":");
    if (login === undefined || uid === undefined || gid === undefined || home === undefined) continue;
    if (login !== name && uid !== name) continue;
    if (!/^\d+$/.test(uid) || !/^\d+$/.test(gid)) continue;
    return { name: login, uid: Number(uid), gid: Number(gid), home };
  }
  return null;
}
