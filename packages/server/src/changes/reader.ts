/**
 * What differs between a base commit and a work tree, read through the hardened git runner: the
 * list (`git diff <base> --raw --numstat -z -M` and the untracked files of
 * `git ls-files --others --exclude-standard -z`), one change found by its ID (the same commands
 * without line counts), and one file's patch. Every name stays raw bytes until it reaches a client;
 * git always runs at the path base (the work tree's top).
 */
import { createHash } from "node:crypto";
import { lstat } from "node:fs/promises";
import type { ChangedFile } from "@pheby/protocol";
import { cutBytes } from "../activity/diff.js";
import type { GitRunner } from "../git/runner.js";
import { mapLimit } from "../util/map-limit.js";
import { decodeName, parseNames, parseRaw, parseRawNumstat, type RawChange } from "./parse.js";
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

/** Untracked files counted at once: their reads overlap, without opening hundreds of files together. */
const UNTRACKED_CONCURRENCY = 8;

/** Every path that differs between `base` and the work tree at `pathBase`, untracked files included. */
export async function listChanges(git: GitRunner, pathBase: string, base: string): Promise<ChangeList> {
  const [diff, others] = await Promise.all([
    git.run(["diff", base, "--raw", "--numstat", "-z", "-M", "--no-relative", "--"], { cwd: pathBase }),
    lsOthers(git, pathBase),
  ]);
  const changes: Change[] = parseRawNumstat(diff.stdout).map((c) => trackedChange(base, c));
  const untracked = await mapLimit(parseNames(others.stdout), UNTRACKED_CONCURRENCY, (name) =>
    untrackedChange(pathBase, base, name),
  );
  for (const change of untracked) if (change) changes.push(change);
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
 * The change whose `file_id` is `fileId`, exactly as {@link listChanges} would list it, or null when
 * no path that differs from `base` has that ID (any more). Found from the paths alone
 * (`git diff --raw`, no line counts, and the untracked names); only the one path found is then counted.
 */
export async function findChange(
  git: GitRunner,
  pathBase: string,
  base: string,
  fileId: string,
): Promise<Change | null> {
  const [diff, others] = await Promise.all([
    git.run(["diff", base, "--raw", "-z", "-M", "--no-relative", "--"], { cwd: pathBase }),
    lsOthers(git, pathBase),
  ]);
  const tracked = parseRaw(diff.stdout).find((c) => fileIdOf(base, c.path) === fileId);
  if (tracked) {
    // Counted as the list counts it: the same command, limited to this path (and a rename's old one,
    // so that git pairs them again).
    const names = tracked.oldPath ? [tracked.path, tracked.oldPath] : [tracked.path];
    const one = await git.run(
      ["diff", base, "--raw", "--numstat", "-z", "-M", "--no-relative", "--", ...names.map(pathspec)],
      { cwd: pathBase },
    );
    const counted = parseRawNumstat(one.stdout).find((c) => c.path.equals(tracked.path));
    return counted ? trackedChange(base, counted) : null; // changed back meanwhile
  }
  const name = parseNames(others.stdout).find((n) => fileIdOf(base, untrackedPath(n)) === fileId);
  return name ? untrackedChange(pathBase, base, name) : null;
}

function lsOthers(git: GitRunner, pathBase: string) {
  return git.run(["ls-files", "--others", "--exclude-standard", "-z"], { cwd: pathBase });
}

/** A tracked path of `git diff --raw --numstat` as a change. */
function trackedChange(base: string, c: RawChange): Change {
  return {
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
  };
}

/** A nested repository (`dir/`): git lists it whole, with the slash. */
function isNested(name: Buffer): boolean {
  return name[name.length - 1] === 0x2f;
}

/** The path an untracked name of `git ls-files --others` stands for. */
function untrackedPath(name: Buffer): Buffer {
  return isNested(name) ? name.subarray(0, -1) : name;
}

/** An untracked name as a change, counted; null when it is gone since git listed it. */
async function untrackedChange(pathBase: string, base: string, name: Buffer): Promise<Change | null> {
  // Nothing of a nested repository is read.
  const counts = isNested(name)
    ? { type: "submodule" as const, additions: 0, binary: false }
    : await untrackedCounts(absolute(pathBase, name)).catch(() => null);
  if (!counts) return null;
  const path = untrackedPath(name);
  return {
    file_id: fileIdOf(base, path),
    path: decodeName(path),
    status: "added",
    type: counts.type,
    additions: counts.additions,
    deletions: 0,
    binary: counts.binary,
    raw: { path },
    untracked: true,
  };
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
