/**
 * Git's NUL-separated output, read as bytes: `git diff --raw [--numstat] -z -M` and
 * `git ls-files -z`. Names stay raw bytes here (a name need not be UTF-8); they are decoded, with
 * invalid bytes as U+FFFD, only where they reach a client.
 */
import type { ChangedFileType, ChangeStatus } from "@pheby/protocol";

/** One path of `git diff <base> --raw [--numstat] -z -M`. */
export interface RawChange {
  /** The path in the working tree (for a deletion: the path in the base). */
  path: Buffer;
  /** The path in the base, for a rename only. */
  oldPath?: Buffer;
  status: ChangeStatus;
  type: ChangedFileType;
  /** null: binary (numstat's `-`), or not counted (`--raw` alone). */
  additions: number | null;
  deletions: number | null;
}

const STATUS: Record<string, ChangeStatus> = {
  A: "added",
  M: "modified",
  D: "deleted",
  R: "renamed",
  T: "type_changed",
};

/** The type of a git mode (`120000` symlink, `160000` submodule, else a file). */
export function typeOfMode(mode: string): ChangedFileType {
  if (mode === "120000") return "symlink";
  if (mode === "160000") return "submodule";
  return "file";
}

/** NUL-terminated fields of `out`. */
function fields(out: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = out.indexOf(0, start); i !== -1; i = out.indexOf(0, start)) {
    parts.push(out.subarray(start, i));
    start = i + 1;
  }
  return parts;
}

/**
 * Parse `--raw -z` output (no numstat): the changed paths, their status and type, without line
 * counts (`additions`/`deletions` null). What a lookup by path needs, without git diffing any content.
 */
export function parseRaw(out: Buffer): RawChange[] {
  return rawRecords(fields(out)).changes;
}

/**
 * Parse `--raw --numstat -z` output: the raw records (`:old new sha sha S\0path\0`, a rename
 * `:… R066\0old\0new\0`) come first, then the numstat records (`a\td\tpath\0`, a rename
 * `a\td\t\0old\0new\0`), in the same order.
 */
export function parseRawNumstat(out: Buffer): RawChange[] {
  const parts = fields(out);
  const { changes, next } = rawRecords(parts);
  let i = next;
  for (const change of changes) {
    const head = (parts[i++] as Buffer | undefined)?.toString("latin1") ?? "";
    const tab1 = head.indexOf("\t");
    const tab2 = head.indexOf("\t", tab1 + 1);
    const added = head.slice(0, tab1);
    const deleted = head.slice(tab1 + 1, tab2);
    if (tab2 === head.length - 1) i += 2; // a rename: the old and new names follow
    change.additions = added === "-" ? null : Number(added);
    change.deletions = deleted === "-" ? null : Number(deleted);
  }
  return changes;
}

/** The raw records at the start of `parts`, and the index of the first field after them. */
function rawRecords(parts: Buffer[]): { changes: RawChange[]; next: number } {
  const changes: RawChange[] = [];
  let i = 0;
  while (i < parts.length && parts[i]?.[0] === 0x3a /* : */) {
    const meta = (parts[i++] as Buffer).toString("latin1").slice(1).split(" ");
    const [oldMode = "", newMode = "", , , letters = ""] = meta;
    const letter = letters[0] ?? "M";
    const status = STATUS[letter] ?? "modified";
    const first = parts[i++] as Buffer;
    const renamed = letter === "R" || letter === "C";
    const second = renamed ? (parts[i++] as Buffer) : undefined;
    const mode = status === "deleted" ? oldMode : newMode;
    changes.push({
      path: second ?? first,
      ...(renamed && letter === "R" ? { oldPath: first } : {}),
      status,
      type: typeOfMode(mode),
      additions: null,
      deletions: null,
    });
  }
  return { changes, next: i };
}

/** The names of `git ls-files -z`. A nested repository is listed as `dir/`. */
export function parseNames(out: Buffer): Buffer[] {
  return fields(out).filter((name) => name.length > 0);
}

/** A name as a client reads it: UTF-8, invalid bytes replaced by U+FFFD. */
export function decodeName(name: Buffer): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(name);
}
