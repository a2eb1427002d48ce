/**
 * The `activity` extension's tool detail: what an agent reports of a tool call (kind, title,
 * locations, content, raw output), turned into the wire fields a client may see. Paths are placed
 * relative to the path base (or scrubbed outside it), text is scrubbed and redacted, diffs are
 * computed here, and every part is bounded.
 */
import { readFile, stat } from "node:fs/promises";
import { basename, resolve } from "node:path";
import {
  LIMITS,
  TOOL_KINDS,
  type ToolContentBlock,
  type ToolKind,
  type ToolLocation,
  type ToolTextBlock,
} from "@pheby/protocol";
import { redactSecrets, truncate } from "../util/redact.js";
import { unifiedDiff } from "./diff.js";
import { type PlaceContext, placePath, placeText } from "./place.js";
import { outputText, rawOutputText } from "./redact-output.js";

/** A tool call's detail in wire form: the fields `activity` adds to a `tool.event`. */
export interface ToolDetail {
  kind: ToolKind;
  title?: string;
  locations?: ToolLocation[];
  content?: ToolContentBlock[];
}

/** One piece of a tool call's content as an agent reports it (paths absolute or relative to its working directory). */
export type RawToolContent =
  | { type: "diff"; path: string; oldText?: string | null; newText: string }
  | { type: "text"; text: string }
  | { type: "other"; label: string };

/**
 * What an agent reported of a tool call so far. A field that is absent is not known (yet); a later
 * report replaces each field it carries, as ACP's `tool_call_update` does.
 */
export interface RawToolCall {
  kind?: string | null;
  title?: string | null;
  locations?: ReadonlyArray<{ path: string; line?: number | null }> | null;
  content?: readonly RawToolContent[] | null;
  /** What the tool returned: shown as text when a finished call has no content. */
  rawOutput?: unknown;
  /** The call has finished (completed or failed). */
  finished?: boolean;
}

/** Files bigger than this are not read to tell a whole file from a fragment (the diff is then a fragment's). */
const MAX_READ_BYTES = 4 * 1024 * 1024;

/** A known ACP kind, else `other`. */
export function toolKind(kind: unknown): ToolKind {
  return typeof kind === "string" && (TOOL_KINDS as readonly string[]).includes(kind)
    ? (kind as ToolKind)
    : "other";
}

/** `.env`, `.env.local`, `prod.env`: files of settings and secrets, whose every value is redacted. */
export function isEnvFile(path: string): boolean {
  const name = basename(path);
  return /^\.env(?:\.|$)/.test(name) || name.endsWith(".env");
}

/** One call's state in a {@link ToolDetailBuilder}. */
interface CallState {
  raw: RawToolCall;
  /** Each file's text before the call, by absolute path, as first read (null: no such file; false: not comparable). */
  before: Map<string, string | null | false>;
  /** The last detail returned, serialised, to tell a change. */
  last: string | undefined;
}

/**
 * Builds each tool call's {@link ToolDetail} from an agent's reports, for one working directory.
 * It remembers, per call, the reports so far and the files as they were when first seen, so a
 * diff whose old text is the whole file is told apart from a fragment even once the edit is applied.
 */
export class ToolDetailBuilder {
  readonly #calls = new Map<string, CallState>();

  constructor(private readonly ctx: PlaceContext) {}

  /**
   * Merge a report of call `id` and return its detail when it changed (undefined when it did not).
   * Reads files it has not seen for this call (to tell a whole-file diff from a fragment).
   */
  async update(id: string, report: RawToolCall): Promise<ToolDetail | undefined> {
    let call = this.#calls.get(id);
    if (!call) {
      call = { raw: {}, before: new Map(), last: undefined };
      this.#calls.set(id, call);
    }
    for (const [key, value] of Object.entries(report)) {
      if (value !== undefined) (call.raw as Record<string, unknown>)[key] = value;
    }
    const detail = await this.#detail(call);
    const json = JSON.stringify(detail);
    if (json === call.last) return undefined;
    call.last = json;
    return detail;
  }

  /** The content blocks of a report alone, for a question about a call (its preview). */
  async preview(id: string, report: RawToolCall): Promise<ToolContentBlock[]> {
    const call = this.#calls.get(id) ?? { raw: {}, before: new Map(), last: undefined };
    const merged: CallState = { ...call, raw: { ...call.raw, ...definedOf(report) } };
    return (await this.#detail(merged)).content ?? [];
  }

  /** Forget a call (its turn ended). */
  forget(id: string): void {
    this.#calls.delete(id);
  }

  async #detail(call: CallState): Promise<ToolDetail> {
    const { raw } = call;
    const detail: ToolDetail = { kind: toolKind(raw.kind) };
    if (typeof raw.title === "string" && raw.title.trim()) detail.title = this.title(raw.title);
    if (raw.locations) detail.locations = this.locations(raw.locations);
    const content = await this.#content(call);
    if (content) detail.content = content;
    return detail;
  }

  /** A text block of agent text (a plan, a command) as output is shown: placed, scrubbed, redacted, its end kept. */
  text(text: string): ToolTextBlock {
    return { type: "text", ...outputText(text, this.ctx) };
  }

  /** Text with the server's own directories replaced by placeholders (for v1 fields, which keep the agent's words otherwise). */
  scrub(text: string): string {
    return this.ctx.scrub(text);
  }

  /** A title fit for a client: paths placed, secrets redacted, at most 500 characters. */
  title(title: string): string {
    return truncate(redactSecrets(placeText(title.trim(), this.ctx)), LIMITS.toolTitleChars);
  }

  /** At most 50 locations, each placed. */
  locations(locations: ReadonlyArray<{ path: string; line?: number | null }>): ToolLocation[] {
    return locations.slice(0, LIMITS.toolLocations).map((l) => {
      const placed = placePath(String(l.path), this.ctx);
      const line = typeof l.line === "number" && Number.isSafeInteger(l.line) && l.line >= 0 ? l.line : null;
      return placed.outside
        ? { path: null, line, outside: true, display: placed.display }
        : { path: placed.path, line, outside: false };
    });
  }

  async #content(call: CallState): Promise<ToolContentBlock[] | undefined> {
    const { raw } = call;
    const blocks: ToolContentBlock[] = [];
    // A read of an .env file shows no value of it, whatever the names.
    const envFile = (raw.locations ?? []).some((l) => isEnvFile(String(l.path)));
    for (const item of raw.content ?? []) {
      if (blocks.length >= LIMITS.toolContentBlocks) break;
      if (item.type === "diff") blocks.push(await this.#diff(call, item));
      else if (item.type === "text") {
        if (item.text.trim() === "") continue;
        blocks.push({ type: "text", ...outputText(item.text, this.ctx, { envFile }) });
      } else blocks.push({ type: "other", label: truncate(item.label, LIMITS.toolLabelChars) });
    }
    if (blocks.length === 0 && raw.finished) {
      const output = rawOutputText(raw.rawOutput);
      if (output !== undefined) blocks.push({ type: "text", ...outputText(output, this.ctx, { envFile }) });
    }
    if (blocks.length > 0 || raw.content) return blocks;
    return undefined;
  }

  async #diff(call: CallState, item: Extract<RawToolContent, { type: "diff" }>): Promise<ToolContentBlock> {
    const placed = placePath(item.path, this.ctx);
    let oldText = typeof item.oldText === "string" ? item.oldText : null;
    let fragment = false;
    if (oldText !== null) {
      const abs = resolve(this.ctx.cwd, item.path);
      if (!call.before.has(abs)) call.before.set(abs, await readText(abs));
      const before = call.before.get(abs);
      // An empty old text for a file that did not exist stands for no file (Qwen Code sends `""`
      // for a new file rather than leaving it out): a new file, not a fragment.
      if (oldText === "" && before === null) oldText = null;
      // The old text is the whole file when it is what the file held; a file that already holds the
      // new text was written before we looked, and its old text stood for all of it.
      else fragment = before !== oldText && before !== item.newText;
    }
    // The texts are redacted before they are diffed, so the patch shows no secret (and an .env file
    // none of its values) while its lines still line up.
    const shown = (text: string) => {
      const placed = redactSecrets(placeText(text, this.ctx));
      return isEnvFile(item.path) ? redactEnv(placed) : placed;
    };
    const diff = unifiedDiff({
      name: placed.display,
      oldText: oldText === null ? null : shown(oldText),
      newText: shown(item.newText),
      fragment,
    });
    return {
      type: "diff",
      path: placed.path,
      display: placed.display,
      outside: placed.outside,
      patch: diff.patch,
      additions: diff.additions,
      deletions: diff.deletions,
      fragment,
      truncated: diff.truncated,
    };
  }
}

/** An .env file's text with every value redacted, line for line, so its diff still shows which names changed. */
function redactEnv(text: string): string {
  return text.replace(/^([ \t]*(?:export[ \t]+)?[A-Za-z_][\w.-]*[ \t]*=[ \t]*)\S.*$/gm, "$1[REDACTED]");
}

function definedOf(report: RawToolCall): RawToolCall {
  return Object.fromEntries(Object.entries(report).filter(([, v]) => v !== undefined)) as RawToolCall;
}

/**
 * A file's UTF-8 text; null when nothing is there (a new file), false when it is there but not a
 * file, too big to compare or unreadable.
 */
async function readText(path: string): Promise<string | null | false> {
  try {
    const info = await stat(path);
    if (!info.isFile() || info.size > MAX_READ_BYTES) return false;
    return await readFile(path, "utf8");
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? null : false;
  }
}
