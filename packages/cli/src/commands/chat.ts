import { createInterface, type Interface } from "node:readline";
import type { PhebyClient } from "@pheby/client";
import {
  APPROVAL_CHOICES,
  type ApprovalChoice,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { formatContent, formatPlan, useColor } from "../activity.js";
import { type Command, EXIT, required } from "../command.js";
import { type Io, note, writeJson } from "../io.js";
import { resolveConversation } from "../resolve.js";
import { switchMode } from "./modes.js";

type RunStatus = ServerMessageOf<"run.finished">["status"];

/** Lines from stdin, handed out one at a time; `null` once stdin ends. */
class LineQueue {
  private readonly lines: string[] = [];
  private readonly waiting: ((line: string | null) => void)[] = [];
  private ended = false;

  push(line: string): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(line);
    else this.lines.push(line);
  }

  end(): void {
    this.ended = true;
    for (const waiter of this.waiting.splice(0)) waiter(null);
  }

  next(): Promise<string | null> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}

/** Parse an approval answer: a number from the menu, a choice name, or `deny: reason`. */
export function parseApprovalAnswer(
  line: string,
  choices: readonly ApprovalChoice[],
): { choice: ApprovalChoice; reason?: string } | undefined {
  const [head = "", ...tail] = line.trim().split(/:(.*)/s);
  const word = head.trim().toLowerCase();
  const byNumber = /^\d+$/.test(word) ? choices[Number(word) - 1] : undefined;
  const choice = byNumber ?? choices.find((c) => c === word || (word.length > 0 && c.startsWith(word)));
  if (!choice) return undefined;
  const reason = tail.join("").trim();
  return choice === "deny" && reason ? { choice, reason } : { choice };
}

/** Parse a clarification answer: a number picks a choice; anything else is free text (when allowed). */
export function parseClarifyAnswer(
  line: string,
  request: Pick<ServerMessageOf<"clarify.request">, "choices" | "allow_free_text">,
): string | undefined {
  const text = line.trim();
  if (!text) return undefined;
  const choices = request.choices ?? [];
  if (/^\d+$/.test(text) && choices[Number(text) - 1] !== undefined) return choices[Number(text) - 1];
  if (choices.includes(text)) return text;
  return request.allow_free_text ? text : undefined;
}

/**
 * Renders one conversation's events. Cumulative deltas are printed as the new
 * suffix, so the answer streams in place; tool events become compact lines,
 * followed by their diffs (`activity`) when they arrive; the plan is printed
 * as a checklist each time it changes.
 */
class Renderer {
  private printed = "";
  private midLine = false;
  /** The diffs printed per tool call: a call's later events repeat its content only when it changed. */
  private readonly diffs = new Map<string, Set<string>>();
  readonly color: boolean;

  constructor(
    private readonly io: Io,
    private readonly json: boolean,
  ) {
    this.color = useColor(io);
  }

  private write(text: string): void {
    if (!text) return;
    this.io.stdout.write(text);
    this.midLine = !text.endsWith("\n");
  }

  /** End a partially printed line before printing a separate one. */
  private breakLine(): void {
    if (this.midLine) this.write("\n");
  }

  line(text: string): void {
    this.breakLine();
    this.write(`${text}\n`);
  }

  frame(m: ServerMessage): void {
    if (this.json) {
      writeJson(this.io, m);
      return;
    }
    switch (m.type) {
      case "message.start":
        this.printed = "";
        break;
      case "message.delta":
      case "message.complete": {
        if (m.type === "message.complete" && m.kind === "notice") {
          this.line(`[notice] ${m.text}`);
          break;
        }
        if (m.text.startsWith(this.printed)) this.write(m.text.slice(this.printed.length));
        else {
          // The final text replaced the draft: print it whole on a fresh line.
          this.breakLine();
          this.write(m.text);
        }
        this.printed = m.text;
        if (m.type === "message.complete") this.breakLine();
        break;
      }
      case "tool.event": {
        const mark = { running: "…", completed: "✓", failed: "✗", cancelled: "⊘" }[m.status];
        const args = m.args_redacted ? ` ${JSON.stringify(m.args_redacted)}` : "";
        const took = typeof m.duration_ms === "number" ? ` (${m.duration_ms} ms)` : "";
        const error = m.error ? `: ${m.error}` : "";
        this.line(`  ${mark} ${m.tool_name} ${m.status}${args}${took}${error}`);
        this.toolDiffs(m);
        break;
      }
      case "plan.updated":
        for (const line of formatPlan(m.entries)) this.line(line);
        break;
      case "attachment.added": {
        const a = m.attachment;
        this.line(`  📎 ${a.filename} (${a.size} bytes, ${a.kind}) — pheby download ${a.attachment_id}`);
        break;
      }
      case "changes.changed":
        // The run moved what the conversation changed in its repository (the changes extension).
        this.line(
          `[changes: ${m.file_count} file${m.file_count === 1 ? "" : "s"} +${m.additions} −${m.deletions} — pheby changes ${m.conversation_id}]`,
        );
        break;
      case "mode.changed":
        // Another client, or the agent itself (leaving plan mode), switched the conversation's mode.
        this.line(`[mode: ${m.mode_id}]`);
        break;
      case "run.finished":
        this.breakLine();
        if (m.status === "failed") this.line(`[run failed: ${m.error ?? "no reason given"}]`);
        if (m.status === "cancelled") this.line("[run cancelled]");
        break;
      default:
        break;
    }
  }

  /** A tool call's diffs that were not printed yet (its output is for `pheby tool`). */
  private toolDiffs(m: ServerMessageOf<"tool.event">): void {
    const printed = this.diffs.get(m.tool_call_id) ?? new Set<string>();
    this.diffs.set(m.tool_call_id, printed);
    const fresh = (m.content ?? []).filter(
      (b) => b.type === "diff" && !printed.has(`${b.path ?? b.display}\n${b.patch}`),
    );
    for (const b of fresh) if (b.type === "diff") printed.add(`${b.path ?? b.display}\n${b.patch}`);
    for (const line of formatContent(fresh, { color: this.color, output: false })) this.line(`    ${line}`);
  }
}

/** One chat session: sends messages, renders the runs, answers decisions from stdin. */
class ChatSession {
  private activeRun: string | undefined;
  private readonly finished = new Map<string, (status: RunStatus) => void>();
  private readonly early = new Map<string, RunStatus>();
  private readonly decisions: ServerMessage[] = [];
  private decisionWake: (() => void) | undefined;
  private lastIdleInterrupt = false;
  private readonly renderer: Renderer;

  constructor(
    private readonly client: PhebyClient,
    private readonly io: Io,
    private readonly conversationId: string,
    private readonly lines: LineQueue,
    private readonly json: boolean,
    private readonly exit: (code: number) => void,
  ) {
    this.renderer = new Renderer(io, json);
    client.on("*", (m) => this.onFrame(m));
  }

  private mine(m: ServerMessage): boolean {
    // `inbox`'s conversation.status is about the conversation list, not the conversation's stream.
    if (m.type === "conversation.status") return false;
    return (m as { conversation_id?: string }).conversation_id === this.conversationId;
  }

  private onFrame(m: ServerMessage): void {
    const resolved = m.type === "approval.resolved" || m.type === "clarify.resolved";
    if (!this.mine(m) && !resolved) return;
    if (resolved && this.json) writeJson(this.io, m);
    if (!resolved) this.renderer.frame(m);
    if (m.type === "approval.request" || m.type === "clarify.request") {
      this.decisions.push(m);
      this.decisionWake?.();
    }
    if (m.type === "run.finished") {
      const done = this.finished.get(m.run_id);
      if (done) done(m.status);
      else this.early.set(m.run_id, m.status);
    }
  }

  /** Ctrl-C: cancel the active run; when idle, a second press exits. */
  interrupt(): void {
    if (this.activeRun) {
      this.renderer.line("^C cancelling the run…");
      this.client.send({ type: "run.cancel", conversation_id: this.conversationId, run_id: this.activeRun });
      this.lastIdleInterrupt = false;
      return;
    }
    if (this.lastIdleInterrupt) this.exit(EXIT.ok);
    this.lastIdleInterrupt = true;
    note(this.io, "(press Ctrl-C again, or Ctrl-D, to exit)");
  }

  /**
   * Send one message and follow its run to the end, answering decisions on the way. With `queue`,
   * a message sent while another run is active waits its turn (run.queued) instead of failing.
   */
  async send(text: string, attachmentIds: string[] = [], queue = false): Promise<RunStatus> {
    this.lastIdleInterrupt = false;
    const accepted = await this.client.request({
      type: "chat.send",
      conversation_id: this.conversationId,
      text,
      ...(attachmentIds.length ? { attachment_ids: attachmentIds } : {}),
      ...(queue ? { queue: true } : {}),
    });
    // No print here: run.accepted, like every event, reaches the output through onFrame, in arrival
    // order (printing the reply too showed it twice, the second time after message.start).
    if (accepted.type === "run.queued" && !this.json) {
      note(this.io, `[queued at position ${accepted.position}: it starts when the run in progress ends]`);
    }
    const runId = accepted.run_id;
    this.activeRun = runId;
    const status = new Promise<RunStatus>((resolve) => {
      const early = this.early.get(runId);
      if (early) resolve(early);
      else this.finished.set(runId, resolve);
    });
    let done = false;
    void status.then(() => {
      done = true;
      this.decisionWake?.();
    });
    while (!done) {
      const decision = this.decisions.shift();
      if (decision) await this.answer(decision, () => done);
      else await new Promise<void>((wake) => (this.decisionWake = wake));
    }
    this.activeRun = undefined;
    this.finished.delete(runId);
    return status;
  }

  /** Ask the user about one approval or clarification until a valid answer (or the run ends). */
  private async answer(m: ServerMessage, runEnded: () => boolean): Promise<void> {
    if (m.type === "approval.request") {
      if (!this.json) {
        this.renderer.line(`Approval needed: ${m.description}`);
        this.renderer.line(`  command: ${m.command}`);
        // What it would do (`activity`): an edit's diff, a command, a plan to accept.
        for (const line of formatContent(m.preview ?? [], { color: this.renderer.color, output: true }))
          this.renderer.line(`    ${line}`);
        this.renderer.line(
          `  ${m.choices.map((c, i) => `[${i + 1}] ${c}`).join("  ")}   (deny: reason — to explain)`,
        );
      }
      for (;;) {
        if (!this.json) this.io.stdout.write("approve> ");
        const line = await this.lines.next();
        if (line === null) return this.noInput();
        if (runEnded()) return;
        const parsed = parseApprovalAnswer(line, m.choices.length ? m.choices : APPROVAL_CHOICES);
        if (!parsed) {
          note(this.io, `choose one of: ${m.choices.join(", ")}`);
          continue;
        }
        await this.respond(() =>
          this.client.request({ type: "approval.respond", approval_id: m.approval_id, ...parsed }),
        );
        return;
      }
    }
    if (m.type === "clarify.request") {
      if (!this.json) {
        this.renderer.line(`Question: ${m.question}`);
        if (m.choices?.length)
          this.renderer.line(`  ${m.choices.map((c, i) => `[${i + 1}] ${c}`).join("  ")}`);
        if (m.allow_free_text) this.renderer.line("  (or type your own answer)");
      }
      for (;;) {
        if (!this.json) this.io.stdout.write("answer> ");
        const line = await this.lines.next();
        if (line === null) return this.noInput();
        if (runEnded()) return;
        const response = parseClarifyAnswer(line, m);
        if (response === undefined) {
          note(this.io, "pick a number from the list");
          continue;
        }
        await this.respond(() =>
          this.client.request({ type: "clarify.respond", clarify_id: m.clarify_id, response }),
        );
        return;
      }
    }
  }

  /** Send an answer; a question withdrawn meanwhile is reported, not fatal. */
  private async respond(request: () => Promise<unknown>): Promise<void> {
    try {
      await request();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "approval_not_found" || code === "clarify_not_found")
        note(this.io, "that question is no longer pending (answered elsewhere or withdrawn)");
      else throw err;
    }
  }

  /** stdin ended while a decision is pending: nobody can answer, so cancel instead of hanging. */
  private noInput(): void {
    note(this.io, "stdin ended with a question pending; cancelling the run");
    if (this.activeRun)
      this.client.send({ type: "run.cancel", conversation_id: this.conversationId, run_id: this.activeRun });
  }
}

export const chat: Command = {
  name: "chat",
  usage: "<conversation> [text…] [--attach ID]… [--mode MODE]",
  summary:
    "Send one message and stream the answer, or open an interactive session when no text is given. Tool events appear as compact lines, followed by their diffs; the agent's plan prints as a checklist; approvals and questions are asked with their choices (and an edit's diff). Ctrl-C cancels the run without exiting; Ctrl-C twice (or Ctrl-D) when idle exits.",
  details: [
    "  --attach ID           claim an uploaded attachment with this message (repeatable; see pheby upload)",
    "  --queue               if a run is already active in the conversation, queue the message behind it",
    "  --mode MODE           switch the conversation to the agent's mode MODE first (see pheby modes)",
    "  --json                print the run's events as JSON lines; answer approvals/questions with lines on stdin",
    "Exit code 5 when the run fails or is cancelled.",
  ],
  options: {
    attach: { type: "string", multiple: true },
    queue: { type: "boolean" },
    mode: { type: "string" },
  },
  examples: [
    'pheby chat "Trip planning" "What should I pack for Lisbon?"',
    'pheby chat "Trip planning" "And for Porto?" --queue',
    'pheby chat "Refactor" "Plan the change to the parser" --mode plan',
    "pheby chat 9f1c0e7a2b3d4c5e6f708192a3b4c5d6",
    'echo once | pheby chat "Trip planning" "/sim approval" --json',
  ],
  async run({ positionals, flags, io, connect }) {
    const target = required(positionals, 0, "<conversation>");
    const text = positionals.slice(1).join(" ");
    const json = flags.json === true;
    const interactive = text.trim() === "";
    const client = await connect({ reconnect: interactive });
    const conversationId = await resolveConversation(client, target);
    // The mode is the conversation's: set before the first message, so its run is in that mode.
    const mode = flags.mode as string | undefined;
    if (mode !== undefined) await switchMode(client, io, conversationId, mode);
    // A drop in an interactive session is resumed: what was missed is printed, nothing twice.
    if (interactive) client.follow(conversationId);

    const lines = new LineQueue();
    const rl: Interface = createInterface({ input: io.stdin, terminal: io.stdin.isTTY === true && !json });
    rl.on("line", (line) => lines.push(line));
    rl.on("close", () => lines.end());
    let exitRequested: ((code: number) => void) | undefined;
    const exited = new Promise<number>((resolve) => (exitRequested = resolve));
    const session = new ChatSession(client, io, conversationId, lines, json, (code) => exitRequested?.(code));
    // On a terminal readline turns Ctrl-C into its own event; otherwise it is a signal.
    const onInterrupt = () => session.interrupt();
    rl.on("SIGINT", onInterrupt);
    process.on("SIGINT", onInterrupt);
    try {
      if (!interactive) {
        const status = await Promise.race([
          session.send(text, (flags.attach as string[] | undefined) ?? [], flags.queue === true),
          exited,
        ]);
        return status === "completed" ? EXIT.ok : typeof status === "number" ? status : EXIT.failed;
      }
      if (!json) note(io, `Chatting in ${conversationId}. Ctrl-C cancels a run; Ctrl-D exits.`);
      for (;;) {
        if (!json) io.stdout.write("you> ");
        const line = await Promise.race([lines.next(), exited]);
        if (line === null || typeof line === "number") return typeof line === "number" ? line : EXIT.ok;
        const message = line.trim();
        if (!message) continue;
        if (message === "/quit" || message === "/exit") return EXIT.ok;
        await Promise.race([session.send(message), exited]);
      }
    } finally {
      process.off("SIGINT", onInterrupt);
      rl.close();
    }
  },
};
