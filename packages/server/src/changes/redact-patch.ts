/**
 * A git patch with its secrets redacted as `activity`'s diffs of the same file are (util/redact.ts;
 * an `.env` file loses every value): line for line, so the patch stays valid unified-diff text with
 * git's own hunks and counts.
 *
 * Each hunk's old side (context and `-` lines) and new side (context and `+` lines) are redacted as
 * texts of their own, so a secret spanning lines (a PEM key) is seen whole on its side; a context line
 * redacted on either side is redacted. Headers (`diff --git`, `---`/`+++`, modes, renames) name only
 * the path, which the reply carries anyway; a hunk header's section heading is a line of the file and
 * is redacted.
 */
import { isEnvFile } from "../activity/tool-detail.js";
import { REDACTED, type RedactOptions, redactAssignments, redactSecrets } from "../util/redact.js";

/** `@@ -a[,b] +c[,d] @@[ heading]` */
const HUNK_HEADER = /^(@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@)(.*)$/;

/** One hunk's body lines (`' '`, `-`, `+`, `\`), as git wrote them. */
type HunkLine = { mark: string; text: string };

/**
 * `patch` with secret-looking values redacted; every value of a file named like an `.env` file
 * (`paths`: the file's path and, for a rename, its old one) when any of them is.
 */
export function redactPatch(patch: string, paths: readonly string[]): string {
  const redact = paths.some(isEnvFile) ? redactAssignments : redactSecrets;
  const options: RedactOptions = { keepLines: true };
  const lines = patch.split("\n");
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i++] as string;
    const header = HUNK_HEADER.exec(line);
    if (!header) {
      out.push(line);
      continue;
    }
    out.push(`${header[1]}${header[4] ? redact(header[4]) : ""}`);
    // The header's counts say where the hunk ends (a `--- x` line inside it is a removed line).
    let oldLeft = header[2] === undefined ? 1 : Number(header[2]);
    let newLeft = header[3] === undefined ? 1 : Number(header[3]);
    const body: HunkLine[] = [];
    while (i < lines.length && (oldLeft > 0 || newLeft > 0 || lines[i]?.startsWith("\\"))) {
      const next = lines[i] as string;
      const mark = next[0];
      if (mark === " ") {
        oldLeft--;
        newLeft--;
      } else if (mark === "-") oldLeft--;
      else if (mark === "+") newLeft--;
      else if (mark !== "\\") break;
      body.push({ mark, text: next.slice(1) });
      i++;
    }
    out.push(...redactHunk(body, (text) => redact(text, options)));
  }
  return out.join("\n");
}

/** A hunk's body lines with each side redacted as one text (see the module comment). */
function redactHunk(body: readonly HunkLine[], redact: (text: string) => string): string[] {
  const side = (marks: string) => {
    const index = body.flatMap((l, n) => (marks.includes(l.mark) ? [n] : []));
    const redacted = redact(index.map((n) => (body[n] as HunkLine).text).join("\n")).split("\n");
    return new Map(index.map((n, k) => [n, redacted[k] ?? REDACTED]));
  };
  const before = side(" -");
  const after = side(" +");
  return body.map((l, n) => {
    if (l.mark === "\\") return `\\${l.text}`; // "\ No newline at end of file"
    const old = before.get(n);
    const shown = old !== undefined && (l.mark === "-" || old !== l.text) ? old : (after.get(n) as string);
    return `${l.mark}${shown}`;
  });
}
