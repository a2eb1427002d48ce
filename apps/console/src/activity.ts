// What the agent did, beyond its answer (the `activity` and `thoughts` extensions): a tool call's
// detail (diffs, output, locations), an approval's preview, the plan as a checklist, the thinking
// folded, and the context meter. Built for a 390 px phone: diffs wrap instead of scrolling sideways,
// and everything long starts collapsed, so the conversation stays the largest thing on screen. Every
// agent-provided string goes through textContent, never innerHTML.
import type { ServerMessageOf, ToolState } from "@pheby/protocol";
import { h, replace } from "./dom.js";

/** One content block of a tool call (or of an approval's preview): a diff, text, or something else. */
export type ContentBlock = NonNullable<ToolState["content"]>[number];
type DiffBlock = Extract<ContentBlock, { type: "diff" }>;
type TextBlock = Extract<ContentBlock, { type: "text" }>;
type Location = NonNullable<ToolState["locations"]>[number];
type PlanEntry = ServerMessageOf<"plan.updated">["entries"][number];
type Usage = Pick<ServerMessageOf<"usage.updated">, "used" | "size" | "cost">;

/** Diff lines shown before "Show all": a phone screen's worth, so a long diff does not bury the chat. */
export const DIFF_LINES_SHOWN = 12;

/**
 * The lines of a unified diff, each with its kind: what the console colours. A file's header (git's
 * `diff --git`, `index`, mode and rename lines, `---`/`+++`) is `meta` up to its first hunk; inside a
 * hunk only the first character counts, so a removed `-- x` line is a deletion, not a header.
 */
export function diffLines(patch: string): { kind: "add" | "del" | "ctx" | "hunk" | "meta"; text: string }[] {
  const lines = patch.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let header = true;
  return lines
    .filter((line) => !line.startsWith("Index: ") && !/^={10,}$/.test(line))
    .map((text) => {
      if (text.startsWith("@@")) {
        header = false;
        return { kind: "hunk", text };
      }
      if (text.startsWith("diff --git ")) header = true;
      if (header || text.startsWith("\\")) return { kind: "meta", text };
      if (text.startsWith("+")) return { kind: "add", text };
      if (text.startsWith("-")) return { kind: "del", text };
      return { kind: "ctx", text };
    });
}

/** Where a path points: relative to the workspace, or the scrubbed display of one outside it. */
function where(block: { path: string | null; display?: string | null; outside: boolean }): string {
  return block.path ?? block.display ?? "(outside the workspace)";
}

/** A unified diff to show: what {@link unifiedDiffView} draws. */
export interface UnifiedDiff {
  /** The file, as the client may see it (relative to the path base, or a scrubbed display). */
  path: string;
  patch: string;
  additions: number;
  deletions: number;
  /** Short remarks after the counts ("truncated", …). */
  notes?: readonly string[];
}

/**
 * A unified diff: its file, `+a −d`, and the coloured lines (a file's header lines left out),
 * collapsed beyond `shown` lines behind *Show all*. Lines wrap, so it reads on a 390 px phone. Shared
 * by tool calls, approval previews and the Changes view.
 */
export function unifiedDiffView(diff: UnifiedDiff, shown = DIFF_LINES_SHOWN): HTMLElement {
  const notes = diff.notes?.filter(Boolean) ?? [];
  const lines = diffLines(diff.patch).filter((l) => l.kind !== "meta" || l.text.startsWith("\\"));
  const body = h("div", { class: "diff-lines", role: "table", "aria-label": `Changes to ${diff.path}` });
  const show = (count: number) =>
    replace(
      body,
      ...lines.slice(0, count).map((l) => h("div", { class: `dl ${l.kind}`, role: "row" }, l.text || " ")),
    );
  show(shown);
  const more =
    lines.length > shown
      ? h(
          "button",
          {
            type: "button",
            class: "link show-all",
            "data-testid": "diff-show-all",
            onclick: (event: Event) => {
              show(lines.length);
              (event.currentTarget as HTMLElement).remove();
            },
          },
          `Show all ${lines.length} lines`,
        )
      : null;
  return h(
    "div",
    { class: "diff", "data-path": diff.path },
    h(
      "div",
      { class: "diff-head" },
      h("span", { class: "diff-path" }, diff.path),
      h(
        "span",
        { class: "diff-stat" },
        h("ins", {}, `+${diff.additions}`),
        " ",
        h("del", {}, `−${diff.deletions}`),
      ),
      notes.length ? h("span", { class: "diff-note" }, notes.join(" · ")) : null,
    ),
    body,
    more,
  );
}

/** A tool call's diff block, with its notes (outside the workspace, a fragment, truncated). */
function diffView(block: DiffBlock): HTMLElement {
  return unifiedDiffView({
    path: where(block),
    patch: block.patch,
    additions: block.additions,
    deletions: block.deletions,
    notes: [
      block.outside ? "outside the workspace" : "",
      block.fragment ? "fragment: line numbers are the snippet's" : "",
      block.truncated ? "truncated" : "",
    ],
  });
}

/** Text output in a scrollable block, folded unless `open` (an approval's preview is read before answering). */
function textView(block: TextBlock, open: boolean): HTMLElement {
  const lines = block.text.split("\n").length;
  return h(
    "details",
    { class: "output", open },
    h(
      "summary",
      {},
      `Output · ${lines} line${lines === 1 ? "" : "s"}${block.truncated ? " (the last 16,000 characters)" : ""}`,
    ),
    h("pre", { tabindex: 0 }, block.text),
  );
}

/** Content blocks (a tool call's, or an approval's preview) as the console shows them. */
export function contentView(blocks: readonly ContentBlock[], options: { open?: boolean } = {}): HTMLElement {
  return h(
    "div",
    { class: "content" },
    ...blocks.map((block) => {
      switch (block.type) {
        case "diff":
          return diffView(block);
        case "text":
          return textView(block, options.open === true);
        default:
          return h("div", { class: "other-block" }, `[${block.label}]`);
      }
    }),
  );
}

/** The places a call touched: `path:line`, or the display of one outside the workspace. */
function locationsView(locations: readonly Location[]): HTMLElement | null {
  if (!locations.length) return null;
  return h(
    "ul",
    { class: "locations", "aria-label": "Locations" },
    ...locations.map((l) =>
      h("li", { class: l.outside ? "outside" : "" }, `${where(l)}${l.line == null ? "" : `:${l.line}`}`),
    ),
  );
}

/**
 * A tool call's detail under its pill: its title, locations and content. Null when the call carries
 * none of them (a v1 connection, or a call without detail), so nothing is drawn.
 */
export function toolDetailView(t: ToolState): HTMLElement | null {
  const blocks = t.content ?? [];
  const locations = t.locations ?? [];
  const title = t.title && t.title !== t.tool_name ? t.title : null;
  if (!blocks.length && !locations.length && !title) return null;
  return h(
    "div",
    { class: "tool-detail", "data-tool-call-id": t.tool_call_id, "data-kind": t.kind ?? "other" },
    title ? h("div", { class: "tool-title" }, title) : null,
    locationsView(locations),
    blocks.length ? contentView(blocks) : null,
  );
}

const PLAN_MARKS: Record<PlanEntry["status"], string> = {
  pending: "☐",
  in_progress: "◐",
  completed: "☑",
};
const PLAN_STATUS: Record<PlanEntry["status"], string> = {
  pending: "pending",
  in_progress: "in progress",
  completed: "completed",
};

/** Fill a plan element with the agent's plan as a checklist: each entry's mark, text and status. */
export function renderPlan(el: HTMLElement, entries: readonly PlanEntry[]): void {
  const done = entries.filter((e) => e.status === "completed").length;
  const open = el.querySelector("details")?.open ?? true;
  replace(
    el,
    h(
      "details",
      { open },
      h("summary", {}, `Plan · ${done}/${entries.length} done`),
      h(
        "ul",
        { class: "checklist" },
        ...entries.map((e) =>
          h(
            "li",
            { "data-status": e.status, "data-priority": e.priority },
            h("span", { class: "mark", "aria-hidden": "true" }, PLAN_MARKS[e.status] ?? "☐"),
            h("span", { class: "entry" }, e.content),
            h("span", { class: "visually-hidden" }, ` (${PLAN_STATUS[e.status] ?? e.status})`),
          ),
        ),
      ),
    ),
  );
}

/** A thought, folded: a "Thinking" summary (with a cursor while it streams) over its text. */
export function renderThought(el: HTMLElement, text: string, streaming: boolean): void {
  let details = el.querySelector("details");
  if (!details) {
    details = h("details", {}, h("summary", {}, "Thinking"), h("div", { class: "thought-text" }));
    el.appendChild(details);
  }
  el.classList.toggle("streaming", streaming);
  details.querySelector("summary")!.textContent = streaming ? "Thinking…" : "Thinking";
  details.querySelector(".thought-text")!.textContent = text;
}

/** A token count in a few characters: 950, 12.3k, 200k, 1.2M. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${n < 10_000 ? (n / 1000).toFixed(1) : Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** A cost as the agent reports it: `$0.12` for an ISO currency, else the amount and whatever it named. */
export function formatCost(cost: { amount: number; currency: string }): string {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency: cost.currency }).format(cost.amount);
  } catch {
    return `${cost.amount} ${cost.currency}`;
  }
}

/**
 * The context meter: how full the agent's context window is (`used`/`size`, a bar), and the cost so
 * far when the agent reports one. Hidden until a `usage.updated` (or a snapshot's `usage`) arrives.
 */
export class ContextMeter {
  readonly el = h("span", {
    class: "context-meter",
    "data-testid": "context-meter",
    role: "status",
    hidden: true,
  });

  /** Show a usage (null: none known for this conversation). */
  set(usage: Usage | null | undefined): void {
    this.el.hidden = !usage;
    if (!usage) {
      replace(this.el);
      return;
    }
    const percent = usage.size > 0 ? Math.round((usage.used / usage.size) * 100) : 0;
    const cost = usage.cost ? ` · ${formatCost(usage.cost)}` : "";
    this.el.title = `Context: ${usage.used} of ${usage.size} tokens (${percent}%)`;
    this.el.dataset.used = String(usage.used);
    this.el.dataset.size = String(usage.size);
    replace(
      this.el,
      h("meter", { min: 0, max: Math.max(usage.size, 1), value: usage.used, high: usage.size * 0.8 }),
      ` ${formatTokens(usage.used)}/${formatTokens(usage.size)}${cost}`,
    );
  }
}
