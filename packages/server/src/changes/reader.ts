/**
 * What differs between a base commit and a work tree, read through the hardened git runner: the
 * list (`git diff <base> --raw --numstat -z -M` and the untracked files of
 * `git ls-files --others --exclude-standard -z`) and one file's patch. Every name stays raw bytes
 * until it reaches a client; git always runs at the path base (the work tree's top).
 */
import { createHash } from "node:crypto";
import { lstat } from "node:fs/promises";
import type { ChangedFile } from "@pheby/protocol";
import { cutBytes } from "../activity/diff.js";
import type { GitRunner } from "../git/runner.js";
import { decodeName, parseNames, parseRawNumstat } from "./parse.js";
import { newFilePatch, untrackedCounts } from "./untracked.js";

/** One changed path, with what the list and a diff need that the wire does not carry. */
export interface Change extends ChangedFile {
  /** The names as git gave them. */
  raw: { path: Buffer; oldPath?: Buffer };
  /** Not in git's index: diffed against /dev/null. */
  untracked: boolean;
}

/** The whole list (never cut: the caller cuts what it sends) and its totals. */
export interface ChangeList {
  changes: Change[];
  additions: number;
  deletions: number;
}

/** `file_id`: derived from the base and the path's bytes, so it stays the same while that file differs. */
export function fileIdOf(base: string, path: Buffer): string {
  return createHash("sha256").update(base).update("\0").update(path).digest("base64url").slice(0, 32);
}

/** The full hash of HEAD's commit, or null when the branch has none yet. */
export async function headCommit(git: GitRunner, pathBase: string): Promise<string | null> {
  const out = await git.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], {
    cwd: pathBase,
    okCodes: [0, 1],
  });
  const hash = out.code === 0 ? out.stdout.toString("utf8").trim() : "";
  return /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(hash) ? hash : null;
}

/** Every path that differs between `base` and the work tree at `pathBase`, untracked files included. */
export async function listChanges(git: GitRunner, pathBase: string, base: string): Promise<ChangeList> {
  const [diff, others] = await Promise.all([
    git.run(["diff", base, "--raw", "--numstat", "-z", "-M", "--no-relative", "--"], { cwd: pathBase }),
    git.run(["ls-files", "--others", "--exclude-standard", "-z"], { cwd: pathBase }),
  ]);
  const changes: Change[] = parseRawNumstat(diff.stdout).map((c) => ({
    file_id: fileIdOf(base, c.path),
    path: decodeName(c.path),
    ...(c.oldPath ? { old_path: decodeName(c.oldPath) } : {}),
    status: c.status,
    type: c.type,
    additions: c.additions ?? 0,
    deletions: c.deletions ?? 0,
    binary: c.additions === null,
    raw: { path: c.path, ...(c.oldPath ? { oldPath: c.oldPath } : {}) },
    untracked: false,
  }));
  for (const name of parseNames(others.stdout)) {
    // A nested repository (`dir/`): git lists it whole; nothing of it is read.
    const nested = name[name.length - 1] === 0x2f;
    const counts = nested
      ? { type: "submodule" as const, additions: 0, binary: false }
      : await untrackedCounts(absolute(pathBase, name)).catch(() => null); // gone since git listed it
    if (!counts) continue;
    const path = nested ? name.subarray(0, -1) : name;
    changes.push({
      file_id: fileIdOf(base, path),
      path: decodeName(path),
      status: "added",
      type: counts.type,
      additions: counts.additions,
      deletions: 0,
      binary: counts.binary,
      raw: { path },
      untracked: true,
    });
  }
  changes.sort((a, b) => Buffer.compare(a.raw.path, b.raw.path));
  let additions = 0;
  let deletions = 0;
  for (const change of changes) {
    additions += change.additions;
    deletions += change.deletions;
  }
  return { changes, additions, deletions };
}

/**
 * A fingerprint of the list: its entries, and each path's size and modification time (an edit that
 * keeps the line counts still moves it).
 */
export async function fingerprintOf(pathBase: string, list: ChangeList): Promise<string> {
  const hash = createHash("sha256");
  for (const c of list.changes) {
    hash
      .update(c.raw.path)
      .update("\0")
      .update(c.raw.oldPath ?? "")
      .update("\0");
    hash.update(`${c.status} ${c.type} ${c.additions} ${c.deletions} ${c.binary}`);
    const stat = await lstat(absolute(pathBase, c.raw.path), { bigint: true }).catch(() => null);
    hash.update(stat ? ` ${stat.size} ${stat.mtimeNs}\n` : " -\n");
  }
  return hash.digest("hex");
}

/** One file's patch: unified, 3 lines of context, cut at a line end within `maxBytes`; null for a binary file. */
export async function patchOf(
  git: GitRunner,
  pathBase: string,
  base: string,
  change: Change,
  maxBytes: number,
): Promise<{ patch: string | null; truncated: boolean }> {
  if (change.binary) return { patch: null, truncated: false };
  let text: string;
  let truncated: boolean;
  if (change.untracked && change.type === "submodule") {
    return { patch: "", truncated: false };
  }
  if (change.untracked && !isUtf8(change.raw.path)) {
    const abs = absolute(pathBase, change.raw.path);
    ({ text, truncated } = await newFilePatch(abs, change.path, await untrackedCounts(abs), maxBytes));
  } else {
    const args = change.untracked
      ? ["diff", "--no-index", "-U3", "--src-prefix=a/", "--dst-prefix=b/", "--", "/dev/null", change.path]
      : [
          "diff",
          base,
          "-M",
          "-U3",
          "--no-relative",
          "--src-prefix=a/",
          "--dst-prefix=b/",
          "--",
          pathspec(change.raw.path),
          ...(change.raw.oldPath ? [pathspec(change.raw.oldPath)] : []),
        ];
    const out = await git.run(args, { cwd: pathBase, okCodes: [0, 1], maxStdoutBytes: maxBytes + 1 });
    text = out.stdout.toString("utf8");
    truncated = out.truncated;
  }
  const cut = cutBytes(text, maxBytes);
  return { patch: cut.text, truncated: truncated || cut.truncated };
}

/**
 * A pathspec that names exactly this path: `:(literal)` for a UTF-8 name; a name that is not UTF-8
 * cannot be an argument, so each run of its invalid bytes becomes `*` of a `:(glob)` (the rest escaped).
 */
export function pathspec(name: Buffer): string {
  if (isUtf8(name)) return `:(literal)${name.toString("utf8")}`;
  const decoded = decodeName(name).replace(/[*?[\\]/g, (c) => `\\${c}`);
  return `:(glob)${decoded.replaceAll("\uFFFD", "*")}`;
}

function isUtf8(bytes: Buffer): boolean {
  return Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes);
}

function absolute(pathBase: string, name: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${pathBase}/`), name]);
}
