/**
 * An untracked file, read by Pheby itself (never through a symlink): its type, line count and
 * whether git would call it binary, and its patch against /dev/null when its name is not UTF-8 (such
 * a name cannot be passed to `git diff --no-index` as an argument).
 */
import { constants } from "node:fs";
import { type FileHandle, lstat, open, readlink } from "node:fs/promises";
import type { ChangedFileType } from "@pheby/protocol";

/** Git looks for a NUL in this many first bytes to call a file binary (xdiff's FIRST_FEW_BYTES). */
const BINARY_PROBE_BYTES = 8000;
/** Git treats larger files as binary without reading them (`core.bigFileThreshold`'s default). */
const BIG_FILE_BYTES = 512 * 1024 * 1024;
const CHUNK = 1024 * 1024;

/** What `git diff --numstat` would say of an untracked file against /dev/null. */
export interface UntrackedCounts {
  type: ChangedFileType;
  additions: number;
  binary: boolean;
}

/** Counts of the untracked file at `abs` (bytes: its name need not be UTF-8). */
export async function untrackedCounts(abs: Buffer): Promise<UntrackedCounts> {
  const stat = await lstat(abs);
  if (stat.isSymbolicLink()) return { type: "symlink", additions: 1, binary: false }; // its target, one line
  if (!stat.isFile() || stat.size === 0) return { type: "file", additions: 0, binary: false };
  if (stat.size > BIG_FILE_BYTES) return { type: "file", additions: 0, binary: true };
  const handle = await openFile(abs);
  if (!handle) return { type: "file", additions: 0, binary: false };
  try {
    let lines = 0;
    let last = 0x0a;
    let offset = 0;
    // Sized to the file (a small file's count does not zero a whole chunk; a file grown since is
    // still read to its end); never exposed, so not zeroed.
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, stat.size)));
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      if (offset < BINARY_PROBE_BYTES && chunk.subarray(0, BINARY_PROBE_BYTES - offset).includes(0))
        return { type: "file", additions: 0, binary: true };
      for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) lines++;
      last = chunk[bytesRead - 1] as number;
      offset += bytesRead;
    }
    return { type: "file", additions: last === 0x0a ? lines : lines + 1, binary: false };
  } finally {
    await handle.close();
  }
}

/** A regular file opened without following a symlink or blocking on a FIFO; null when it is neither. */
async function openFile(abs: Buffer): Promise<FileHandle | null> {
  const handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  if ((await handle.stat()).isFile()) return handle;
  await handle.close();
  return null;
}

/**
 * The patch of an untracked file as `git diff --no-index /dev/null <name>` writes it, built here for
 * a name git cannot be handed: at most `maxBytes` of it read (the caller cuts the text).
 */
export async function newFilePatch(
  abs: Buffer,
  name: string,
  counts: UntrackedCounts,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  const quoted = JSON.stringify(name).slice(1, -1);
  const header = (mode: string) =>
    `diff --git "a/${quoted}" "b/${quoted}"\nnew file mode ${mode}\n--- /dev/null\n+++ "b/${quoted}"\n`;
  if (counts.type === "symlink") {
    const target = await readlink(abs, "utf8");
    return {
      text: `${header("120000")}@@ -0,0 +1 @@\n+${target}\n\\ No newline at end of file\n`,
      truncated: false,
    };
  }
  if (counts.additions === 0) return { text: header("100644"), truncated: false };
  const handle = await openFile(abs);
  if (!handle) return { text: header("100644"), truncated: false };
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes + 1, 0);
    const content = buffer.subarray(0, bytesRead).toString("utf8");
    const lines = content.split("\n");
    const complete = content.endsWith("\n");
    if (complete) lines.pop();
    const body = lines.map((line) => `+${line}\n`).join("");
    const noNewline = !complete && bytesRead <= maxBytes ? "\\ No newline at end of file\n" : "";
    return {
      text: `${header("100644")}@@ -0,0 +1${counts.additions === 1 ? "" : `,${counts.additions}`} @@\n${body}${noNewline}`,
      truncated: bytesRead > maxBytes,
    };
  } finally {
    await handle.close();
  }
}
