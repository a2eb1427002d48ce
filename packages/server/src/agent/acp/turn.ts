/**
 * The state of one running prompt turn: its sink, open tool calls, pending
 * questions and the MEDIA-line filter. Updates reach it already serialized.
 */
import type { ContentBlock, ToolCall, ToolCallContent, ToolCallUpdate } from "@agentclientprotocol/sdk";
import type { ToolContentBlock } from "@pheby/protocol";
import type { RawToolCall, RawToolContent, ToolDetailBuilder } from "../../activity/tool-detail.js";
import type { ToolDetail, TurnResult, TurnSink } from "../port.js";
import { type FoundFile, filesInBlock, MediaLineFilter } from "./content.js";

/** Longest tool failure text passed on (tool output can be huge and contain host paths). */
const FAILURE_CHARS = 300;

/** Longest tool name taken from a title. */
const TOOL_NAME_CHARS = 60;

type ToolUpdate = (ToolCall | ToolCallUpdate) & { sessionUpdate: "tool_call" | "tool_call_update" };

/** A tool call as shown so far: its best name and the arguments merged from every update. */
interface ToolState {
  ended: boolean;
  name: string;
  /** The name came from an explicit field (`name`, `_meta.*.toolName`), not a title. */
  named: boolean;
  args: Record<string, unknown> | undefined;
}

export class Turn {
  /** The user cancelled (the run's signal aborted). */
  cancelled = false;
  /**
   * Given up: cancelled, and still running `cancelTimeoutMs` later. It no longer counts as the
   * agent's work (the agent may be restarted under it) and it dies with its process.
   */
  abandoned = false;
  /** Settles when the turn is given up while its process lives on: its session is lost to the conversation. */
  readonly released: Promise<void>;
  #release!: () => void;
  #released = false;
  private readonly tools = new Map<string, ToolState>();
  /** Calls of Pheby's own tools the agent asked permission for (Qwen Code reports no other trace in time). */
  private readonly phebyCalls: Array<{ name: string; args: Record<string, unknown> | undefined }> = [];
  private readonly questions = new Set<AbortController>();
  private readonly media: string[] = [];
  private readonly filter = new MediaLineFilter((path) => this.media.push(path));

  constructor(
    readonly sink: TurnSink,
    /** Stores a found file (root-checked by the backend). */
    private readonly deliver: (file: FoundFile) => Promise<void>,
    /** Makes agent text fit for a client: the host's paths replaced, secrets redacted, cut to `max`. */
    private readonly clientText: (text: string, max: number) => string,
    /** Turns what the agent reports of each call into the detail `activity` connections see. */
    private readonly details: ToolDetailBuilder,
  ) {
    this.released = new Promise((resolve) => (this.#release = resolve));
  }

  /** The turn was given up and its process keeps running (other conversations' turns): let its session go. */
  release(): void {
    this.#released = true;
    this.#release();
  }

  /** See {@link release}. */
  get isReleased(): boolean {
    return this.#released;
  }

  /** An `agent_message_chunk`: text goes to the sink, files to the store. */
  async message(block: ContentBlock): Promise<void> {
    if (block.type === "text") {
      const shown = this.filter.push(block.text);
      if (shown) this.sink.text(shown);
      await this.deliverMedia();
    } else {
      for (const file of filesInBlock(block)) await this.deliver(file);
    }
  }

  /** An `agent_thought_chunk`: its text is the agent's thinking (other blocks carry none). */
  thought(block: ContentBlock): void {
    if (block.type === "text") this.sink.thought(block.text);
  }

  /**
   * `tool_call` / `tool_call_update` → toolStart/toolEnd, with the call's detail (kind, title,
   * locations, content, raw output) as `activity` connections see it: paths placed, text scrubbed and
   * redacted, diffs computed, bounded (ToolDetailBuilder).
   *
   * Agents fill a call in over several updates (OpenCode sends `{cwd}` first and the command
   * later; Claude Code repeats `tool_call` with the input and names the tool in `_meta`), so
   * arguments are merged and an explicit name beats a title. While the call runs, each update
   * that makes the name or arguments fuller is reported as another `toolStart` of the same ID; one
   * that changes only the detail as `toolDetail`.
   */
  async tool(update: ToolUpdate): Promise<void> {
    const id = update.toolCallId;
    // Computed first (it may read the file an edit is about): the events below carry it.
    const detail = await this.details.update(id, rawToolCall(update));
    let tool = this.tools.get(id);
    const explicit = explicitName(update);
    const raw = update.rawInput;
    const args =
      raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
    let told = false;
    if (!tool) {
      tool = { ended: false, name: explicit ?? titleName(update), named: explicit !== null, args };
      this.tools.set(id, tool);
      this.start(id, tool, detail);
      told = true;
    } else if (!tool.ended) {
      const before = JSON.stringify([tool.name, tool.args]);
      if (explicit && !tool.named) {
        tool.name = explicit;
        tool.named = true;
      }
      if (args) tool.args = { ...tool.args, ...args };
      if (JSON.stringify([tool.name, tool.args]) !== before) {
        this.start(id, tool, detail);
        told = true;
      }
    }
    if (tool.ended || (update.status !== "completed" && update.status !== "failed")) {
      if (detail && !told && !tool.ended) this.sink.toolDetail?.({ toolCallId: id, detail });
      return;
    }
    tool.ended = true;
    const with_ = told || !detail ? {} : { detail };
    if (update.status === "completed") this.sink.toolEnd({ toolCallId: id, status: "completed", ...with_ });
    else this.sink.toolEnd({ toolCallId: id, status: "failed", error: this.#failureText(update), ...with_ });
  }

  /**
   * What a permission question about `call` shows `activity` connections: a plan-mode exit's plan
   * (Claude Code's `ExitPlanMode`), else the call's content (an edit's diff), else the command it runs.
   */
  async preview(call: ToolCallUpdate): Promise<ToolContentBlock[]> {
    const input =
      call.rawInput && typeof call.rawInput === "object" && !Array.isArray(call.rawInput)
        ? (call.rawInput as Record<string, unknown>)
        : {};
    const name = explicitName({ ...call, sessionUpdate: "tool_call_update" });
    if (typeof input.plan === "string" && (name === "ExitPlanMode" || call.kind === "switch_mode"))
      return [this.details.text(input.plan)];
    const blocks = await this.details.preview(call.toolCallId, rawToolCall(call));
    if (blocks.length === 0 && typeof input.command === "string" && input.command.trim())
      return [this.details.text(`$ ${input.command}`)];
    return blocks;
  }

  /** The tool calls this turn has shown so far, for telling apart which turn an MCP call came from. */
  calls(): Array<{ name: string; args: Record<string, unknown> | undefined; ended: boolean }> {
    return [
      ...[...this.tools.values()].map(({ name, args, ended }) => ({ name, args, ended })),
      ...this.phebyCalls.map((c) => ({ ...c, ended: false })),
    ];
  }

  /** The agent is about to call one of Pheby's tools (it asked permission, answered by Pheby). */
  notePhebyCall(name: string, args: Record<string, unknown> | undefined): void {
    this.phebyCalls.push({ name, args });
  }

  private start(toolCallId: string, tool: ToolState, detail: ToolDetail | undefined): void {
    // The name (a title when the agent gives no name) and the arguments reach every client as v1
    // fields: no server path in them (an edit's `file_path`, "Write /srv/work/a.txt").
    const args = tool.args && (this.scrubValue(tool.args) as Record<string, unknown>);
    const toolName = this.details.scrub(tool.name);
    this.sink.toolStart({ toolCallId, toolName, args, ...(detail ? { detail } : {}) });
  }

  /**
   * `value` with the server's own directories replaced in each of its strings, keys included (Codex
   * keys its `changes` by absolute path); the shape is kept.
   */
  scrubValue(value: unknown): unknown {
    if (typeof value === "string") return this.details.scrub(value);
    if (Array.isArray(value)) return value.map((v) => this.scrubValue(v));
    if (value !== null && typeof value === "object")
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [this.details.scrub(k), this.scrubValue(v)]),
      );
    return value;
  }

  /** Ask the user through the sink; withdrawn when the turn ends, is cancelled, or the agent withdraws. */
  async ask<T>(agentSignal: AbortSignal, ask: (withdraw: AbortSignal) => Promise<T>): Promise<T> {
    const withdraw = new AbortController();
    const onAgentAbort = () => withdraw.abort();
    agentSignal.addEventListener("abort", onAgentAbort, { once: true });
    this.questions.add(withdraw);
    try {
      return await ask(withdraw.signal);
    } finally {
      agentSignal.removeEventListener("abort", onAgentAbort);
      this.questions.delete(withdraw);
    }
  }

  /** Withdraw every pending question (cancel, crash, end of turn). */
  withdrawAll(): void {
    for (const q of this.questions) q.abort();
  }

  /** End the turn's side state: release held text, close tools left open. */
  async finish(result: TurnResult): Promise<void> {
    this.withdrawAll();
    const rest = this.filter.flush();
    if (rest) this.sink.text(rest);
    await this.deliverMedia();
    for (const [toolCallId, tool] of this.tools) {
      if (tool.ended) continue;
      tool.ended = true;
      if (result.status === "failed")
        this.sink.toolEnd({ toolCallId, status: "failed", error: result.error });
      else this.sink.toolEnd({ toolCallId, status: result.status });
    }
  }

  /** A failed tool's own text (tool output can be huge and name host paths), fit for a client. */
  #failureText(update: ToolUpdate): string {
    for (const c of update.content ?? []) {
      if (c.type === "content" && c.content.type === "text" && c.content.text.trim())
        return this.clientText(c.content.text.trim(), FAILURE_CHARS);
    }
    return "The tool failed.";
  }

  private async deliverMedia(): Promise<void> {
    for (const path of this.media.splice(0)) await this.deliver({ source: "path", path });
  }
}

/** What an ACP tool call update reports, in the terms of the activity module (absent: not reported). */
function rawToolCall(update: ToolCall | ToolCallUpdate): RawToolCall {
  const status = (update as { status?: unknown }).status;
  return {
    ...(update.kind ? { kind: update.kind } : {}),
    ...(typeof update.title === "string" ? { title: update.title } : {}),
    ...(Array.isArray(update.locations)
      ? { locations: update.locations.map((l) => ({ path: l.path, line: l.line ?? null })) }
      : {}),
    ...(Array.isArray(update.content) ? { content: update.content.map(rawContent) } : {}),
    ...(update.rawOutput !== undefined ? { rawOutput: update.rawOutput } : {}),
    ...(status === "completed" || status === "failed" ? { finished: true } : {}),
  };
}

/** One piece of ACP tool content: diffs and text pass, the rest is named by a label. */
function rawContent(item: ToolCallContent): RawToolContent {
  if (item.type === "diff")
    return { type: "diff", path: item.path, oldText: item.oldText ?? null, newText: item.newText };
  if (item.type === "terminal") return { type: "other", label: "terminal" };
  const block = item.content;
  if (block.type === "text") return { type: "text", text: block.text };
  if (block.type === "resource" && "text" in block.resource)
    return { type: "text", text: block.resource.text };
  if (block.type === "resource_link") return { type: "other", label: "resource link" };
  return { type: "other", label: block.type };
}

/**
 * The tool's own name: the `name` field, else a `toolName` an agent put in `_meta` (Claude Code),
 * else the `<tool>__` prefix of the call ID (Gemini CLI: `run_shell_command__…`, whose titles are
 * the command itself).
 */
function explicitName(update: ToolUpdate): string | null {
  if (update.name) return update.name;
  for (const value of Object.values(update._meta ?? {})) {
    const name = (value as { toolName?: unknown } | null)?.toolName;
    if (typeof name === "string" && name.trim()) return clip(name.trim());
  }
  return /^([A-Za-z][\w.-]*)__./.exec(update.toolCallId)?.[1] ?? null;
}

/**
 * A short tool name from the title. Titles often embed arguments ("terminal: rm -rf …"), which are
 * not redacted as `args` are, so keep only a leading identifier, else a clipped first line.
 */
function titleName(update: ToolUpdate): string {
  const title = update.title?.trim();
  if (title) {
    const prefix = /^([\w.-]+):\s/.exec(title)?.[1];
    return prefix ?? clip(title.split("\n")[0]!);
  }
  return update.kind ?? "tool";
}

function clip(text: string): string {
  return text.length > TOOL_NAME_CHARS ? `${text.slice(0, TOOL_NAME_CHARS)}…` : text;
}
