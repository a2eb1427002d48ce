// How the `activity` extension's detail reads in a terminal: a tool call's diffs (unified, coloured
// on a terminal), its output and locations, and the agent's plan as a checklist. Shared by `pheby chat`
// (as they arrive) and `pheby tool` (one call on demand).
import type { ServerMessageOf, ToolState } from "@pheby/protocol";
import type { Io } from "./io.js";

/** One content block of a tool call or an approval's preview. */
export type ContentBlock = NonNullable<ToolState["content"]>[number];
type PlanEntry = ServerMessageOf<"plan.updated">["entries"][number];

const SGR = { red: "31", green: "32", cyan: "36", dim: "2", bold: "1" } as const;

/** Colour only on a terminal, and not when NO_COLOR is set (no-color.org). */
export function useColor(io: Io): boolean {
  return io.stdout.isTTY === true && !io.env.NO_COLOR;
}

function paint(color: boolean, code: keyof typeof SGR, text: string): string {
  return color ? `\u001b[${SGR[code]}m${text}\u001b[0m` : text;
}

/**
 * A unified diff as lines for a terminal: additions green, deletions red, hunk headers cyan, the file
 * headers dim (with `color`); the text unchanged otherwise. Control characters in the agent's text are
 * shown as `?`, so a diff cannot move the cursor or recolour the terminal.
 */
export function formatPatch(patch: string, color: boolean): string[] {
  const lines = safe(patch).split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line) => {
    if (
      line.startsWith("+++ ") ||
      line.startsWith("--- ") ||
      line.startsWith("Index: ") ||
      /^={10,}$/.test(line)
    )
      return paint(color, "dim", line);
    if (line.startsWith("@@")) return paint(color, "cyan", line);
    if (line.startsWith("+")) return paint(color, "green", line);
    if (line.startsWith("-")) return paint(color, "red", line);
    return line;
  });
}

/** Agent text without terminal control characters (tabs and newlines stay). */
export function safe(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "?");
}

/** Where a path points: relative to the workspace, or the scrubbed display of one outside it. */
function where(block: { path: string | null; display?: string | null; outside: boolean }): string {
  return safe(block.path ?? block.display ?? "(outside the workspace)");
}

/**
 * Content blocks as lines: each diff with a header (file, `+a -d`, notes) and its patch; `text`
 * blocks (output) only when `output` (chat leaves them to `pheby tool`); others as `[label]`.
 */
export function formatContent(
  blocks: readonly ContentBlock[],
  options: { color: boolean; output: boolean },
): string[] {
  const out: string[] = [];
  for (const block of blocks) {
    if (block.type === "diff") {
      const notes = [
        block.outside ? "outside the workspace" : "",
        block.fragment ? "fragment" : "",
        block.truncated ? "truncated" : "",
      ].filter(Boolean);
      out.push(
        paint(
          options.color,
          "bold",
          `diff ${where(block)} +${block.additions} -${block.deletions}${notes.length ? ` (${notes.join(", ")})` : ""}`,
        ),
        ...formatPatch(block.patch, options.color),
      );
    } else if (block.type === "text") {
      if (!options.output) continue;
      out.push(
        paint(options.color, "bold", `output${block.truncated ? " (the last 16,000 characters)" : ""}`),
      );
      out.push(...safe(block.text).replace(/\n$/, "").split("\n"));
    } else out.push(`[${safe(block.label)}]`);
  }
  return out;
}

const PLAN_MARKS: Record<PlanEntry["status"], string> = {
  pending: "[ ]",
  in_progress: "[~]",
  completed: "[x]",
};

/** The plan as a checklist: `[x]` completed, `[~]` in progress, `[ ]` pending, one entry a line. */
export function formatPlan(entries: readonly PlanEntry[]): string[] {
  const done = entries.filter((e) => e.status === "completed").length;
  return [
    `Plan (${done}/${entries.length} done):`,
    ...entries.map((e) => `  ${PLAN_MARKS[e.status] ?? "[ ]"} ${safe(e.content).replace(/\n/g, " ")}`),
  ];
}

/** A whole tool call for `pheby tool`: name, status, kind and title, locations, then every content block. */
export function formatTool(t: ToolState, color: boolean): string[] {
  const took = typeof t.duration_ms === "number" ? ` (${t.duration_ms} ms)` : "";
  return [
    paint(color, "bold", `${t.tool_name} ${t.status}${took}${t.kind ? ` [${t.kind}]` : ""}`),
    ...(t.title ? [safe(t.title)] : []),
    ...(t.error ? [`error: ${safe(t.error)}`] : []),
    ...(t.args_redacted ? [`args: ${JSON.stringify(t.args_redacted)}`] : []),
    ...(t.locations ?? []).map((l) => `at ${where(l)}${l.line == null ? "" : `:${l.line}`}`),
    ...formatContent(t.content ?? [], { color, output: true }),
  ];
}
