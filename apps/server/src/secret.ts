import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/**
 * The secret to use: the configured one, else the one stored in the data
 * directory, else a new 256-bit secret written there with mode 0600. Returns
 * the file's path (never the secret) so the operator can be told where it is.
 */
export function resolveSecret(
  configured: string | undefined,
  dataDir: string,
): { secret: string; file?: string } {
  if (configured) return { secret: configured };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700); // an existing directory keeps its mode otherwise
  const file = join(dataDir, "secret");
  try {
    const stored = readFileSync(file, "utf8").trim();
    chmodSync(file, 0o600); // a file the operator wrote with the umask's mode
    if (stored.length >= 32) return { secret: stored, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const secret = randomBytes(32).toString("hex");
  // "wx" never overwrites a file another process created meanwhile.
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return { secret, file };
}

/**
 * Replace the generated secret in `<dataDir>/secret` with a new 256-bit one (mode 0600), atomically:
 * written to a temp file, fsynced, then renamed over the old one. A running server keeps the secret
 * it read at start until it restarts. Returns the file's path (never the secret), or undefined when
 * there is no generated secret to replace (the server's secret is configured, or it never started).
 */
export function rotateSecret(dataDir: string): string | undefined {
  const file = join(dataDir, "secret");
  if (!existsSync(file)) return undefined;
  const temp = `${file}.new`;
  rmSync(temp, { force: true }); // left by an interrupted rotation
  const fd = openSync(temp, "wx", 0o600);
  try {
    writeFileSync(fd, `${randomBytes(32).toString("hex")}\n`);
    // On disk before the rename: a power cut must not leave an empty secret file behind.
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(temp, 0o600);
  renameSync(temp, file);
  return file;
}
