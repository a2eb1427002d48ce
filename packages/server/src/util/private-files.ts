import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";

/**
 * Owner-only modes for everything in the data directory: transcripts, the resume log, push keys
 * and blobs must not be readable by other local users whatever the process's umask (a umask of
 * 022 makes new files 0644 and directories 0755).
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Create `dir` (and missing parents) mode 0700, and make an existing one 0700 too. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // mkdir leaves an existing directory's mode alone, and the umask may have masked the new one.
  chmodSync(dir, PRIVATE_DIR_MODE);
}

/** Make `file` mode 0600 if it exists; a missing file is fine. */
export function restrictFile(file: string): void {
  try {
    chmodSync(file, PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/** Create `file` empty and mode 0600 unless it exists; an existing one is made 0600. */
export function ensurePrivateFile(file: string): void {
  closeSync(openSync(file, "a", PRIVATE_FILE_MODE));
  chmodSync(file, PRIVATE_FILE_MODE);
}
