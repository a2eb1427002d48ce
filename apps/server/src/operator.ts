// The operator commands of pheby-server: they work on the data directory (and the secret file)
// the configuration names, not on a running server, and print what they did, never a secret.
import { openDeviceAdmin, openWorktreeAdmin, type WorktreeSummary } from "@pheby/server";
import { worktreesDir } from "./agents.js";
import type { Config } from "./config.js";
import { rotateSecret } from "./secret.js";

/** Where a command writes. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

const KEEPS_DEVICES =
  "Paired devices keep working: rotating the master secret does not revoke them (pheby-server devices revoke-all does).";

/** `pheby-server rotate-secret`; returns the exit code. */
export function rotateSecretCommand(config: Config, io: Output): number {
  const file = config.secret ? undefined : rotateSecret(config.data_dir);
  if (!file) {
    io.err(
      config.secret
        ? "pheby-server: the secret is set by PHEBY_SECRET (or `secret` in the PHEBY_CONFIG file), so change it there"
        : `pheby-server: there is no generated secret in ${config.data_dir} to rotate: this server's secret comes from PHEBY_SECRET (or \`secret\` in the PHEBY_CONFIG file), or it has never started. Change it where it is set`,
    );
    io.err("(generate one with `openssl rand -hex 32`), then restart the server.");
    io.err(KEEPS_DEVICES);
    return 2;
  }
  io.out(`A new secret is in ${file} (mode 0600).`);
  io.out(
    "Restart the server to use it (systemctl restart pheby); until then it accepts the old one. " +
      "Clients that sign in with the master secret need the new one.",
  );
  io.out(KEEPS_DEVICES);
  return 0;
}

/** `pheby-server devices [list | revoke-all]`; returns the exit code. */
export function devicesCommand(action: "list" | "revoke-all", config: Config, io: Output): number {
  const admin = openDeviceAdmin(config.data_dir);
  if (!admin) {
    io.err(`pheby-server: no database in ${config.data_dir} (is PHEBY_DATA_DIR right?)`);
    return 2;
  }
  try {
    if (action === "list") {
      const devices = admin.list();
      if (devices.length === 0) io.out("No paired devices.");
      for (const d of devices) {
        const seen = d.lastSeenAt === null ? "never seen" : `seen ${new Date(d.lastSeenAt).toISOString()}`;
        io.out(`${d.id}  paired ${new Date(d.createdAt).toISOString()}  ${seen}  ${d.name ?? "(unnamed)"}`);
      }
      return 0;
    }
    const revoked = admin.revokeAll();
    io.out(`Revoked ${revoked.length} device${revoked.length === 1 ? "" : "s"}.`);
    if (revoked.length > 0)
      io.out(
        "A running server refuses their secrets from its next check on; restart it to also close the connections they hold now.",
      );
    return 0;
  } finally {
    admin.close();
  }
}

/** One worktree as the operator reads it: conversation, branch, state, conversation's state, path. */
const worktreeLine = (w: WorktreeSummary) =>
  `${w.conversationId}  ${w.branch ?? "(no branch)"}  ${w.state === "dirty" ? "uncommitted changes" : w.state}  conversation ${w.conversation}  ${w.root}`;

/** `pheby-server worktrees [--prune]`; returns the exit code. */
export async function worktreesCommand(prune: boolean, config: Config, io: Output): Promise<number> {
  const dir = worktreesDir(config);
  const admin = openWorktreeAdmin(config.data_dir, dir);
  if (!admin) {
    io.err(`pheby-server: no database in ${config.data_dir} (is PHEBY_DATA_DIR right?)`);
    return 2;
  }
  try {
    if (!prune) {
      const worktrees = await admin.list();
      if (worktrees.length === 0) io.out(`No worktrees in ${dir}.`);
      for (const w of worktrees) io.out(worktreeLine(w));
      return 0;
    }
    io.out(`Pruning the worktrees in ${dir} whose conversation no longer exists…`);
    const removed = await admin.prune((w, outcome) => io.out(`${outcome}: ${worktreeLine(w)}`));
    io.out(
      `Removed ${removed} worktree${removed === 1 ? "" : "s"}; their branches are kept (git branch --list 'pheby/*').`,
    );
    return 0;
  } catch (err) {
    // Git failing (a timeout, a repository it cannot read): say so, with git's own first line.
    io.err(`pheby-server: worktrees: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    admin.close();
  }
}
