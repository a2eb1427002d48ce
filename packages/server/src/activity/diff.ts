/**
 * Unified diffs of an agent's edits, computed on the server with jsdiff (3 lines of context), bounded
 * to the protocol's patch size.
 */
import { LIMITS, type ToolDiffBlock } from "@pheby/protocol";
import { FILE_HEADERS_ONLY, formatPatch, type StructuredPatch, structuredPatch } from "diff";

/** Lines of context around each change. */
export const DIFF_CONTEXT = 3;
/** Longer texts are not diffed line by line (it could hold the event loop): the patch replaces them whole. */
const MAX_DIFF_CHARS = 1024 * 1024;
/** The most time one diff may take before it falls back to replacing the text whole. */
const DIFF_TIMEOUT_MS = 500;

/** What to diff, once the path is placed and the old text is known to be the file or a fragment. */
export interface DiffInput {
  /** The path as the patch headers name it (relative, or the scrubbed display). */
  name: string;
  /** The old text; null for a new file. */
  oldText: string | null;
  newText: string;
  /** The texts are fragments of the file: diff them as such (hunk lines relative to the fragment). */
  fragment: boolean;
}

/** The patch and its counts: `patch` is cut to {@link LIMITS}.toolPatchBytes at a line end. */
export type DiffResult = Pick<ToolDiffBlock, "patch" | "additions" | "deletions" | "truncated">;

/** A unified diff of one file (or of two fragments of it). */
export function unifiedDiff(input: DiffInput): DiffResult {
  const oldName = input.oldText === null ? "/dev/null" : input.name;
  let oldText = input.oldText ?? "";
  let newText = input.newText;
  if (input.fragment) {
    // A fragment's missing final newline says nothing about the file: no "\ No newline" noise.
    if (oldText !== "" && !oldText.endsWith("\n")) oldText += "\n";
    if (newText !== "" && !newText.endsWith("\n")) newText += "\n";
  }
  const big = oldText.length + newText.length > MAX_DIFF_CHARS;
  const patch =
    (big
      ? undefined
      : structuredPatch(oldName, input.name, oldText, newText, undefined, undefined, {
          context: DIFF_CONTEXT,
          timeout: DIFF_TIMEOUT_MS,
        })) ?? replaceWhole(oldName, input.name, oldText, newText);
  let additions = 0;
  let deletions = 0;
  for (const hunk of patch.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith("+")) additions++;
      else if (line.startsWith("-")) deletions++;
    }
  }
  const text = patch.hunks.length === 0 ? "" : formatPatch(patch, FILE_HEADERS_ONLY);
  const cut = cutBytes(text, LIMITS.toolPatchBytes);
  return { patch: cut.text, additions, deletions, truncated: cut.truncated };
}

/** The patch that removes every old line and adds every new one (what a too large or slow diff falls back to). */
function replaceWhole(oldName: string, newName: string, oldText: string, newText: string): StructuredPatch {
  const lines = (text: string) => (text === "" ? [] : text.replace(/\n$/, "").split("\n"));
  const before = lines(oldText);
  const after = lines(newText);
  const hunks =
    before.length + after.length === 0
      ? []
      : [
          {
            oldStart: before.length === 0 ? 0 : 1,
            oldLines: before.length,
            newStart: after.length === 0 ? 0 : 1,
            newLines: after.length,
            lines: [...before.map((l) => `-${l}`), ...after.map((l) => `+${l}`)],
          },
        ];
  return { oldFileName: oldName, newFileName: newName, oldHeader: undefined, newHeader: undefined, hunks };
}

/** `text` cut to at most `max` UTF-8 bytes at the end of a line, and whether it was cut. */
export function cutBytes(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max / 3 || Buffer.byteLength(text) <= max) return { text, truncated: false };
  // The longest prefix within `max` bytes, then back to its last line end.
  let prefix = Buffer.from(text).subarray(0, max).toString("utf8");
  if (prefix.endsWith("\uFFFD")) prefix = prefix.slice(0, -1);
  const end = prefix.lastIndexOf("\n");
  return { text: end >= 0 ? prefix.slice(0, end + 1) : prefix, truncated: true };
}
