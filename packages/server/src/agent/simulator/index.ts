import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  APPROVAL_CHOICES,
  type ApprovalChoice,
  type ContextUsage,
  type PlanEntry,
  type PlanEntryStatus,
} from "@pheby/protocol";
import { unifiedDiff } from "../../activity/diff.js";
import type { PlaceContext } from "../../activity/place.js";
import { outputText } from "../../activity/redact-output.js";
import type { ToolDetail } from "../../activity/tool-detail.js";
import { GitRunner } from "../../git/runner.js";
import { askingModeOf, autoApproves, SIMULATOR_AGENT } from "../modes.js";
import { nearestChoice } from "../nearest.js";
import type {
  AgentBackend,
  AgentCommandInfo,
  AgentHost,
  AgentModes,
  ProducedFile,
  TurnInput,
  TurnResult,
  TurnSink,
} from "../port.js";
import { SIM_CATALOGUE, settingsTag } from "./catalogue.js";
import { pdfDocument, pngImage } from "./files.js";
import { applySimChanges, ensureSimWorkspace, SIM_CHANGES, SIM_WORKSPACE_DIR } from "./workspace.js";

/** Options of {@link createSimulatorBackend}. */
export interface SimulatorOptions {
  /** Delay between streamed words, in ms (default 30; tests use ~1). `/sim slow` uses at least 50. */
  delayMs?: number;
  /** Delay before the unsolicited message of `/sim later`, in ms (default 2000). */
  laterDelayMs?: number;
  /** Delay after which `/sim timeout` gives up on its approval (it expires), in ms (default 5000). */
  approvalTimeoutMs?: number;
  /**
   * Where `/sim file` and `/sim image` write their files, which they then
   * deliver by path like a real agent (the server copies them only when this
   * directory is inside its `allowedFileRoots`). Default: none, and the files
   * are delivered as bytes.
   */
  workDir?: string;
}

/** The file `/sim file` delivers. */
export const SIM_FILE = { filename: "pheby-report.pdf", mimeType: "application/pdf" } as const;
/** The file `/sim image` delivers. */
export const SIM_IMAGE = { filename: "pheby-image.png", mimeType: "image/png" } as const;

/** Largest N accepted by `/sim long N`. */
export const SIM_LONG_MAX = 1_000_000;
/** Words streamed by `/sim slow`. */
export const SIM_SLOW_WORDS = 200;

/** When the schedule of `/sim schedule` would run (every day at 09:00), and its default prompt. */
export const SIM_SCHEDULE = { cron: "0 9 * * *", prompt: "Summarise my day" } as const;

/** The command `/sim approval` and `/sim timeout` ask to run. */
export const SIM_APPROVAL_COMMAND = "rm -rf /tmp/pheby-sim-build";
/** The question of `/sim clarify` and its choices. */
export const SIM_CLARIFY = {
  question: "Deploy to staging or production?",
  choices: ["staging", "production"],
};
/** The question of `/sim clarify free`. */
export const SIM_CLARIFY_FREE = "What should the release be called?";
/** What `/sim approval limited` offers: an agent without session or persistent approvals. */
export const SIM_LIMITED_CHOICES: readonly ApprovalChoice[] = ["once", "deny"];

/** The simulator's context window, in tokens (`usage.updated.size`). */
export const SIM_CONTEXT_WINDOW = 200_000;
/** What one simulated token costs, in USD. */
export const SIM_USD_PER_TOKEN = 0.000_003;

/** Tokens one turn adds to its session's context: a fixed 50 for the answer and a token per 4 characters of the prompt. */
export function simTurnTokens(prompt: string): number {
  return 50 + Math.ceil(prompt.length / 4);
}

/** The usage the simulator reports with `used` tokens in its session's context. */
export function simUsage(used: number): ContextUsage {
  return {
    used,
    size: SIM_CONTEXT_WINDOW,
    cost: { amount: Number((used * SIM_USD_PER_TOKEN).toFixed(6)), currency: "USD" },
  };
}

/** The steps of `/sim plan`, each done in turn (the first has high priority, the last low). */
export const SIM_PLAN_STEPS = ["Read the failing test", "Fix the port parsing", "Update the README"] as const;

/** `/sim plan`'s plan when `done` steps are completed and the next (if any) is in progress. */
export function simPlan(done: number, started: boolean): PlanEntry[] {
  const priorities = ["high", "medium", "low"] as const;
  return SIM_PLAN_STEPS.map((content, i) => {
    const status: PlanEntryStatus =
      i < done ? "completed" : i === done && started ? "in_progress" : "pending";
    return { content, status, priority: priorities[i]! };
  });
}

/** What `/sim think` thinks (word by word, an emoji included: offsets count UTF-16 units) before its answer. */
export const SIM_THOUGHT = "The user wants to see me think 🤔 so I reason step by step before answering.";
/** `/sim think`'s answer. */
export const SIM_THOUGHT_ANSWER = "I thought about it first; this is the answer.";

/**
 * The edit `/sim diff` asks to make: a whole file, old and new, diffed in memory (the simulator
 * never writes into a workspace). Its path is relative, as in a conversation's path base.
 */
export const SIM_DIFF = {
  path: "src/greeting.ts",
  oldText:
    'export function greet(name: string) {\n  return "Hello " + name;\n}\n\nexport const version = 1;\n',
  newText:
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the simulated file's source holds a template literal
    "export function greet(name: string) {\n  return `Hello, ${name}!`;\n}\n\nexport const version = 2;\n",
} as const;

/** The command `/sim output` runs, and what it prints: a secret among the lines, which must arrive redacted. */
export const SIM_OUTPUT = {
  command: "npm test",
  secret: "sk-simulated-0123456789abcdef",
  text: [
    "> pheby-sim@1.0.0 test",
    "> vitest run",
    "",
    "loaded .env: OPENAI_API_KEY=sk-simulated-0123456789abcdef",
    " ✓ test/greeting.test.ts (3 tests)",
    "Test Files  1 passed (1)",
    "     Tests  3 passed (3)",
  ].join("\n"),
} as const;

/**
 * Where the simulator's paths live: nowhere on disk. Its paths are already relative, so nothing is
 * placed or scrubbed, but output goes through the same redaction as a real agent's.
 */
const SIM_PLACE: PlaceContext = { cwd: "/pheby-sim", base: "/pheby-sim", scrub: (text) => text };

const HELP =
  "Simulator scenarios: /sim tools, /sim slow, /sim fail, /sim crash, /sim notice, /sim later, /sim long N (1..1000000), " +
  "/sim approval, /sim approval limited, /sim timeout, /sim clarify, /sim clarify free, /sim clarify choices, /sim file, /sim image, /sim schedule [prompt], /sim diff, /sim output, " +
  "/sim think [N] (1..1000000), /sim plan, /sim mode, /sim mode leave, /sim compact, /sim changes.";

/**
 * The simulator's modes (the `modes` extension), in its order; a session starts in `default`.
 * `auto-edit` and `yolo` approve without asking (agent/modes.ts), and `yolo` is YOLO's mode.
 */
export const SIM_MODES: AgentModes["available"] = [
  { id: "default", name: "Default", description: "Asks before running a tool" },
  { id: "plan", name: "Plan", description: "Describes what it would do and changes nothing" },
  { id: "auto-edit", name: "Auto-edit", description: "Edits files without asking" },
  { id: "yolo", name: "YOLO", description: "Runs every tool without asking" },
];
/** The mode a simulator session starts in. */
export const SIM_DEFAULT_MODE = "default";

/**
 * The simulator's slash commands: its scenarios, each as the command that selects it (`sim tools` is
 * sent as `/sim tools`). Announced right after a session starts, as ACP agents do.
 */
export const SIM_COMMANDS: AgentCommandInfo[] = [
  ["help", "List the simulator's scenarios", null],
  ["tools", "Two tool calls: one completes, one fails", null],
  ["slow", "A slow streamed answer (200 words)", null],
  ["fail", "A run that fails", null],
  ["crash", "The backend throws", null],
  ["notice", "A notice, then an answer", null],
  ["later", "An answer, then a message outside any run", null],
  ["long", "An answer of exactly N characters", "N (1..1000000)"],
  ["approval", "A shell tool that asks for approval", "[limited]"],
  ["timeout", "An approval the agent gives up on", null],
  ["clarify", "A question with choices", "[free | choices]"],
  ["file", "Delivers a PDF document", null],
  ["image", "Delivers a PNG image", null],
  ["schedule", "Creates a schedule through Pheby's tools", "[prompt]"],
  ["diff", "An edit with its diff, behind an approval", null],
  ["output", "A command whose output holds a secret (arrives redacted)", null],
  ["think", "Thinking before the answer", "[N] (1..1000000)"],
  ["plan", "A plan that advances step by step", null],
  ["mode", "Says which mode the turn runs in", "[leave]"],
  ["compact", "Compacts the conversation's context", null],
  ["changes", "Edits, creates and deletes files in the simulator's own git repository", null],
].map(([name, description, hint]) => ({
  name: `sim ${name}`,
  description: description as string,
  hint: hint as string | null,
}));

/** Resolves after `ms`, or early with `false` when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Stream `chunks` with `delay` between them; false when cancelled. */
async function stream(
  chunks: string[],
  delay: number,
  sink: TurnSink,
  signal: AbortSignal,
): Promise<boolean> {
  for (const chunk of chunks) {
    if (!(await sleep(delay, signal))) return false;
    sink.text(chunk);
  }
  return true;
}

/** Stream thinking `chunks` with `delay` between them; false when cancelled. */
async function think(chunks: string[], delay: number, sink: TurnSink, signal: AbortSignal): Promise<boolean> {
  for (const chunk of chunks) {
    if (!(await sleep(delay, signal))) return false;
    sink.thought(chunk);
  }
  return true;
}

/** `text` in `parts` chunks of about equal length (a long text streamed in few chunks). */
function chunked(text: string, parts: number): string[] {
  const size = Math.ceil(text.length / parts);
  return Array.from({ length: Math.ceil(text.length / size) }, (_, i) =>
    text.slice(i * size, (i + 1) * size),
  );
}

/** Split text into words that keep their trailing space, so the chunks join back to the exact text. */
function words(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [];
}

/** At most the first 80 characters of a user text, on one line (what the simulator echoes). */
function excerpt(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 80);
}

/** " You attached N file(s): name (size bytes[, text inlined]), …." — proof the agent side got them. */
function received(input: TurnInput): string {
  if (input.attachments.length === 0) return "";
  const list = input.attachments.map(
    (a) => `${a.filename} (${a.size} bytes${a.inlineText === undefined ? "" : ", text inlined"})`,
  );
  const n = input.attachments.length;
  return ` You attached ${n} file${n === 1 ? "" : "s"}: ${list.join(", ")}.`;
}

/** A deterministic text of exactly `n` characters. */
export function longText(n: number): string {
  const unit = "Pheby simulator long reply. ";
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
}

/**
 * The built-in deterministic agent: no randomness, no network. A plain
 * message gets a streamed word-by-word reply; messages starting with `/sim `
 * select the scenarios documented in docs/simulator.md (a stable interface).
 */
export function createSimulatorBackend(options: SimulatorOptions = {}): AgentBackend {
  const delay = options.delayMs ?? 30;
  const laterDelay = options.laterDelayMs ?? 2_000;
  const approvalTimeout = options.approvalTimeoutMs ?? 5_000;
  const timers = new Set<NodeJS.Timeout>();
  let host: AgentHost | undefined;
  let toolCounter = 0;
  // Approvals the simulator honours without asking again: "session" per agent
  // session, "always" for every session (in memory, for the backend's life).
  const sessionApproved = new Set<string>();
  let alwaysApproved = false;
  // Each session's mode, for the backend's life (a restarted server's sessions start in default again).
  const sessionModes = new Map<string, string>();
  const modesOf = (sessionId: string): AgentModes => ({
    available: SIM_MODES,
    currentModeId: sessionModes.get(sessionId) ?? SIM_DEFAULT_MODE,
    defaultModeId: SIM_DEFAULT_MODE,
  });
  /** Put the turn's session in the mode its settings want (never one that approves without asking when it must ask). */
  const enterMode = (input: TurnInput) => {
    const ids = SIM_MODES.map((m) => m.id);
    let mode = sessionModes.get(input.sessionId) ?? SIM_DEFAULT_MODE;
    if (input.settings.mode && ids.includes(input.settings.mode)) mode = input.settings.mode;
    else if (input.settings.yolo && !input.settings.asking) mode = "yolo";
    if (input.settings.asking && autoApproves(mode, SIMULATOR_AGENT))
      mode = askingModeOf(ids, SIM_DEFAULT_MODE, SIMULATOR_AGENT) ?? SIM_DEFAULT_MODE;
    sessionModes.set(input.sessionId, mode);
    return mode;
  };

  // Tokens "in context" per agent session: grows with every turn, deterministically.
  const tokens = new Map<string, number>();
  const tally = (input: TurnInput): ContextUsage => {
    const used = (tokens.get(input.sessionId) ?? 0) + simTurnTokens(input.text);
    tokens.set(input.sessionId, used);
    return simUsage(used);
  };

  // The simulator's own repository (`/sim changes`), made on first use; calls wait for each other.
  const git = new GitRunner();
  const workdir = () => (host?.serverPaths ? join(host.serverPaths.dataDir, SIM_WORKSPACE_DIR) : undefined);
  let workspaceReady: Promise<string> | undefined;
  const workspace = (dir: string) => {
    workspaceReady ??= ensureSimWorkspace(dir, git).catch((err: unknown) => {
      workspaceReady = undefined;
      throw err;
    });
    return workspaceReady;
  };

  const done: TurnResult = { status: "completed" };
  const cancelled: TurnResult = { status: "cancelled" };
  const reply = async (text: string, sink: TurnSink, signal: AbortSignal) =>
    (await stream(words(text), delay, sink, signal)) ? done : cancelled;

  /**
   * `/sim approval` and `/sim timeout`: a shell tool paused on an approval.
   * once/session/always run it, deny fails it; with `timeoutMs` the agent
   * gives up on the question after that delay, and says so (`expiresInMs`): the
   * server withdraws it then, telling `expiry` clients. A session/always approval is
   * honoured by later runs without asking. With `offered` (`/sim approval
   * limited`) the agent offers fewer choices and applies the nearest one to
   * the user's, as a real agent backend must.
   */
  async function approval(
    input: TurnInput,
    sink: TurnSink,
    signal: AbortSignal,
    opts: { timeoutMs?: number; offered?: readonly ApprovalChoice[] } = {},
  ) {
    const { timeoutMs, offered = APPROVAL_CHOICES } = opts;
    const toolCallId = `sim-tool-${++toolCounter}`;
    const command = SIM_APPROVAL_COMMAND;
    sink.toolStart({ toolCallId, toolName: "shell", args: { command } });
    const earlier = alwaysApproved ? "always" : sessionApproved.has(input.sessionId) ? "session" : null;
    let text: string;
    if (earlier) {
      text = `I ran \`${command}\` without asking: you approved it for ${earlier === "always" ? "every conversation" : "this conversation"} earlier.`;
    } else {
      const answer = await sink.askPermission({
        toolCallId,
        command,
        description: "Destructive shell command (rm -rf), simulated",
        choices: [...offered],
        ...(timeoutMs === undefined ? {} : { expiresInMs: timeoutMs }),
      });
      if (signal.aborted) return cancelled;
      if (answer.outcome === "cancelled") {
        sink.toolEnd({ toolCallId, status: "failed", error: "Approval withdrawn: it timed out" });
        return reply("The approval timed out and was withdrawn, so nothing ran.", sink, signal);
      }
      const applied = nearestChoice(answer.choice, offered);
      const mapped = applied === answer.choice ? "" : `, the nearest I offer to your ${answer.choice}`;
      if (applied === undefined || applied === "deny") {
        sink.toolEnd({ toolCallId, status: "failed", error: "Denied by the user" });
        const why = answer.reason ? ` Your reason: "${excerpt(answer.reason)}".` : "";
        return reply(`Denied: I did not run \`${command}\` and will not retry.${why}`, sink, signal);
      }
      if (applied === "session") sessionApproved.add(input.sessionId);
      if (applied === "always") alwaysApproved = true;
      text = `Approved (${applied}${mapped}): I ran \`${command}\`.`;
    }
    if (!(await sleep(delay, signal))) return cancelled;
    sink.toolEnd({ toolCallId, status: "completed" });
    return reply(text, sink, signal);
  }

  /**
   * `/sim diff`: an edit of {@link SIM_DIFF} behind an approval. `activity` clients see its diff on the
   * tool event and as the approval's preview; once/session/always "apply" it (in memory), deny fails it.
   */
  async function diff(sink: TurnSink, signal: AbortSignal) {
    const toolCallId = `sim-tool-${++toolCounter}`;
    const { path, oldText, newText } = SIM_DIFF;
    const detail: ToolDetail = {
      kind: "edit",
      title: `Edit ${path}`,
      locations: [{ path, line: 2, outside: false }],
      content: [
        {
          type: "diff",
          path,
          display: path,
          outside: false,
          fragment: false,
          ...unifiedDiff({ name: path, oldText, newText, fragment: false }),
        },
      ],
    };
    sink.toolStart({ toolCallId, toolName: "edit", args: { file_path: path }, detail });
    const answer = await sink.askPermission({
      toolCallId,
      command: `Edit ${path}`,
      description: "Edit a file (simulated, nothing is written)",
      choices: [...APPROVAL_CHOICES],
    });
    if (signal.aborted) return cancelled;
    if (answer.outcome === "cancelled" || answer.choice === "deny") {
      sink.toolEnd({ toolCallId, status: "failed", error: "Denied by the user" });
      return reply(`I left ${path} as it was.`, sink, signal);
    }
    if (!(await sleep(delay, signal))) return cancelled;
    sink.toolEnd({ toolCallId, status: "completed" });
    return reply(`I edited ${path}: the greeting has a comma now, and the version is 2.`, sink, signal);
  }

  /**
   * `/sim changes`: {@link SIM_CHANGES} applied to the simulator's own repository (made on first use),
   * one tool call per file. The `changes` extension then lists them (the simulator's working directory
   * is that repository), and the run's end sends `changes.changed` the first time.
   */
  async function changes(sink: TurnSink, signal: AbortSignal) {
    const dir = workdir();
    if (!dir) return reply("The simulator has no data directory to keep a repository in.", sink, signal);
    await applySimChanges(await workspace(dir)); // at once; then reported as one tool call per file
    const { modified, created, deleted } = SIM_CHANGES;
    const steps = [
      ["edit", modified.path],
      ["write", created.path],
      ["delete", deleted.path],
    ] as const;
    for (const [toolName, path] of steps) {
      const toolCallId = `sim-tool-${++toolCounter}`;
      sink.toolStart({ toolCallId, toolName, args: { file_path: path } });
      if (!(await sleep(delay, signal))) return cancelled;
      sink.toolEnd({ toolCallId, status: "completed" });
    }
    return reply(
      `I edited ${modified.path}, created ${created.path} and deleted ${deleted.path}.`,
      sink,
      signal,
    );
  }

  /**
   * `/sim output`: a command whose output holds a secret ({@link SIM_OUTPUT}); `activity` clients get
   * the output with the secret redacted, once the command has finished.
   */
  async function output(sink: TurnSink, signal: AbortSignal) {
    const toolCallId = `sim-tool-${++toolCounter}`;
    const { command, text } = SIM_OUTPUT;
    const detail: ToolDetail = { kind: "execute", title: command, locations: [] };
    sink.toolStart({ toolCallId, toolName: "shell", args: { command }, detail });
    if (!(await sleep(delay, signal))) return cancelled;
    sink.toolEnd({
      toolCallId,
      status: "completed",
      detail: { ...detail, content: [{ type: "text", ...outputText(text, SIM_PLACE) }] },
    });
    return reply("The tests passed: 3 of 3.", sink, signal);
  }

  /**
   * `/sim clarify` (choices and free text), `/sim clarify free` (free text only) and `/sim clarify
   * choices` (choices only, `allowFreeText: false`): the answer is echoed. Free text reaches the agent
   * even for the choices-only question (clients always offer "Other"), and is said to be one.
   */
  async function clarify(mode: string | undefined, sink: TurnSink, signal: AbortSignal) {
    const answer = await sink.askClarification(
      mode === "free"
        ? { question: SIM_CLARIFY_FREE, choices: null, allowFreeText: true }
        : { question: SIM_CLARIFY.question, choices: SIM_CLARIFY.choices, allowFreeText: mode !== "choices" },
    );
    if (signal.aborted) return cancelled;
    if (answer.outcome === "cancelled") return reply("The question was withdrawn.", sink, signal);
    const own = mode === "choices" && !SIM_CLARIFY.choices.includes(answer.response);
    return reply(
      `You answered${own ? " in your own words" : ""}: "${excerpt(answer.response)}".`,
      sink,
      signal,
    );
  }

  /**
   * `/sim schedule [prompt]`: the agent schedules itself through Pheby's own `schedule_create`
   * tool, exactly as a real agent's MCP call would (so the schedule waits, unconfirmed, for the
   * user), then relays what the tool said.
   */
  async function schedule(prompt: string, sink: TurnSink, signal: AbortSignal, sessionId: string) {
    const toolCallId = `sim-tool-${++toolCounter}`;
    const args = {
      prompt: prompt || SIM_SCHEDULE.prompt,
      cron: SIM_SCHEDULE.cron,
      name: "Simulated schedule",
    };
    sink.toolStart({ toolCallId, toolName: "schedule_create", args });
    if (!host?.tools) {
      sink.toolEnd({ toolCallId, status: "failed", error: "Pheby's tools are off" });
      return reply("I could not create a schedule: Pheby's tools for agents are turned off.", sink, signal);
    }
    const result = await host.tools.call(sessionId, "schedule_create", args);
    if (signal.aborted) return cancelled;
    if (result.isError) {
      sink.toolEnd({ toolCallId, status: "failed", error: result.text });
      return reply(`I could not create a schedule: ${result.text}`, sink, signal);
    }
    sink.toolEnd({ toolCallId, status: "completed" });
    const { schedule: made } = JSON.parse(result.text) as { schedule: { schedule_id: string } };
    return reply(
      `I created the schedule ${made.schedule_id} (every day at 09:00). It is not active until you confirm it in Pheby.`,
      sink,
      signal,
    );
  }

  /** Deliver a generated file: by path through `workDir` when set (like a real agent), else as bytes. */
  async function deliver(bytes: Buffer, meta: { filename: string; mimeType: string }, sink: TurnSink) {
    let file: ProducedFile = { source: "bytes", bytes, ...meta };
    if (options.workDir !== undefined) {
      const path = join(options.workDir, meta.filename);
      await writeFile(path, bytes);
      file = { source: "path", path, mimeType: meta.mimeType };
    }
    await sink.file(file);
  }

  async function scenario(args: string[], input: TurnInput, sink: TurnSink, signal: AbortSignal) {
    const [name = "help", arg] = args;
    switch (name) {
      case "tools": {
        const ok = `sim-tool-${++toolCounter}`;
        sink.toolStart({
          toolCallId: ok,
          toolName: "web_search",
          args: { query: "pheby protocol", api_key: "sk-simulated" },
        });
        if (!(await sleep(delay, signal))) return cancelled;
        sink.toolEnd({ toolCallId: ok, status: "completed" });
        const bad = `sim-tool-${++toolCounter}`;
        sink.toolStart({
          toolCallId: bad,
          toolName: "read_file",
          args: { path: "notes.txt", auth: { token: "t" } },
        });
        if (!(await sleep(delay, signal))) return cancelled;
        sink.toolEnd({ toolCallId: bad, status: "failed", error: "Permission denied (simulated)" });
        return reply("I ran two tools: web_search completed and read_file failed.", sink, signal);
      }
      case "slow": {
        const text = Array.from({ length: SIM_SLOW_WORDS }, (_, i) => `word${i + 1} `).join("");
        return (await stream(words(text), Math.max(delay, 50), sink, signal)) ? done : cancelled;
      }
      case "fail": {
        if (!(await stream(words("This run is about to fail. "), delay, sink, signal))) return cancelled;
        return { status: "failed", error: "Simulated failure (/sim fail)" } satisfies TurnResult;
      }
      case "crash":
        throw new Error("simulated backend crash in /srv/pheby/secret/path (/sim crash)");
      case "notice":
        sink.notice("Simulated notice: the agent is warming up (/sim notice).");
        return reply("This is the answer that follows the notice.", sink, signal);
      case "later": {
        const result = await reply("I will send you another message in a moment.", sink, signal);
        if (result.status === "completed") {
          const timer = setTimeout(() => {
            timers.delete(timer);
            host?.unsolicited({
              sessionId: input.sessionId,
              text: "This message arrived later, outside any run (/sim later).",
            });
          }, laterDelay);
          timers.add(timer);
        }
        return result;
      }
      case "approval":
        return approval(input, sink, signal, arg === "limited" ? { offered: SIM_LIMITED_CHOICES } : {});
      case "timeout":
        return approval(input, sink, signal, { timeoutMs: approvalTimeout });
      case "clarify":
        return clarify(arg, sink, signal);
      case "long": {
        const n = arg !== undefined && /^\d{1,7}$/.test(arg) ? Number(arg) : Number.NaN;
        if (!(n >= 1 && n <= SIM_LONG_MAX)) {
          return {
            status: "failed",
            error: `Usage: /sim long N, with 1 <= N <= ${SIM_LONG_MAX}`,
          } satisfies TurnResult;
        }
        // At most 8 chunks: the cumulative deltas of a long reply stay a few times its size.
        return (await stream(chunked(longText(n), 8), delay, sink, signal)) ? done : cancelled;
      }
      case "plan": {
        // A plan that advances over the run: all pending, then each step in progress and completed.
        sink.plan(simPlan(0, false));
        for (const [i, step] of SIM_PLAN_STEPS.entries()) {
          sink.plan(simPlan(i, true));
          if (!(await stream(words(`${step}… `), delay, sink, signal))) return cancelled;
        }
        sink.plan(simPlan(SIM_PLAN_STEPS.length, false));
        return reply("Done: every step of the plan is completed.", sink, signal);
      }
      case "think": {
        // `/sim think N`: a thought of exactly N characters in at most 8 chunks (past the limits
        // of one thought and of a run at N > 64,000 and 256,000); else the short one, word by word.
        const n = arg !== undefined && /^\d{1,7}$/.test(arg) ? Number(arg) : Number.NaN;
        if (arg !== undefined && !(n >= 1 && n <= SIM_LONG_MAX)) {
          return {
            status: "failed",
            error: `Usage: /sim think [N], with 1 <= N <= ${SIM_LONG_MAX}`,
          } satisfies TurnResult;
        }
        const thought = arg === undefined ? words(SIM_THOUGHT) : chunked(longText(n), 8);
        if (!(await think(thought, delay, sink, signal))) return cancelled;
        return reply(SIM_THOUGHT_ANSWER, sink, signal);
      }
      case "file": {
        const pdf = pdfDocument([
          "Pheby simulator report",
          "This PDF was generated by the simulator agent (/sim file).",
          "It proves that agent deliverables reach the phone.",
        ]);
        await deliver(pdf, SIM_FILE, sink);
        return reply(`Here is your document: ${SIM_FILE.filename} (${pdf.length} bytes).`, sink, signal);
      }
      case "image": {
        const png = pngImage(64, 64);
        await deliver(png, SIM_IMAGE, sink);
        return reply(`Here is your image: ${SIM_IMAGE.filename} (${png.length} bytes).`, sink, signal);
      }
      case "schedule":
        return schedule(args.slice(1).join(" "), sink, signal, input.sessionId);
      case "mode": {
        const mode = sessionModes.get(input.sessionId) ?? SIM_DEFAULT_MODE;
        if (arg === "leave" && mode !== SIM_DEFAULT_MODE) {
          // As an agent leaving plan mode once its plan was accepted: it switches by itself.
          sessionModes.set(input.sessionId, SIM_DEFAULT_MODE);
          host?.modeChanged?.(input.sessionId, SIM_DEFAULT_MODE);
          return reply(
            `I left the ${mode} mode by myself: this conversation is in the default mode now.`,
            sink,
            signal,
          );
        }
        const name = SIM_MODES.find((m) => m.id === mode)?.name ?? mode;
        return reply(`This turn runs in the ${mode} mode (${name}).`, sink, signal);
      }
      case "compact":
        host?.compacted?.(input.sessionId);
        return reply("I compacted this conversation's context.", sink, signal);
      case "diff":
        return diff(sink, signal);
      case "output":
        return output(sink, signal);
      case "changes":
        return changes(sink, signal);
      default:
        return reply(HELP, sink, signal);
    }
  }

  return {
    name: "simulator",
    capabilities: {
      listSessions: false,
      loadHistory: false,
      deleteSession: true,
      models: true,
      reasoning: true,
      images: false,
    },
    async start(h) {
      host = h;
    },
    async catalogue() {
      return SIM_CATALOGUE;
    },
    async createSession(conversationId) {
      const sessionId = `sim-${conversationId}`;
      sessionModes.set(sessionId, SIM_DEFAULT_MODE);
      // As ACP agents do right after session/new, outside any turn.
      const timer = setTimeout(() => {
        timers.delete(timer);
        host?.sessionModes?.(sessionId, modesOf(sessionId));
        host?.sessionCommands?.(sessionId, SIM_COMMANDS);
      }, 0);
      timers.add(timer);
      return { sessionId };
    },
    async setMode(sessionId, modeId) {
      if (!sessionModes.has(sessionId)) return { outcome: "closed" };
      if (!SIM_MODES.some((m) => m.id === modeId))
        return { outcome: "refused", reason: `the simulator has no mode ${modeId}` };
      sessionModes.set(sessionId, modeId);
      return { outcome: "applied" };
    },
    modesAgent: () => SIMULATOR_AGENT,
    workdir,
    sessionInfo(sessionId) {
      return sessionModes.has(sessionId) ? { modes: modesOf(sessionId), commands: SIM_COMMANDS } : null;
    },
    async prompt(input, sink, signal) {
      // A session this backend has not seen (after a restart) opens now and says what it offers.
      const fresh = !sessionModes.has(input.sessionId);
      enterMode(input);
      if (fresh) {
        host?.sessionModes?.(input.sessionId, modesOf(input.sessionId));
        host?.sessionCommands?.(input.sessionId, SIM_COMMANDS);
      }
      const text = input.text.trim();
      const result =
        text === "/sim" || text.startsWith("/sim ")
          ? await scenario(text.split(/\s+/).slice(1), input, sink, signal)
          : await reply(
              `You said: "${excerpt(text)}".${received(input)} This is the Pheby simulator, streaming a deterministic reply word by word with no LLM involved. Send "/sim help" to see the scenarios. ${settingsTag(input.settings)}`,
              sink,
              signal,
            );
      // Every turn that ran to its end reports the session's usage, as agents do after each answer.
      if (!signal.aborted) sink.usage(tally(input));
      return result;
    },
    async deleteSession() {},
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
