/**
 * Test harness for the ACP backend: a recording TurnSink and AgentHost, and the
 * command line of the scripted fake agent.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ToolContentBlock } from "@pheby/protocol";
import { inject } from "vitest";
import type {
  AgentHost,
  ClarifyAnswer,
  ClarifyQuestion,
  PermissionAnswer,
  PermissionQuestion,
  ProducedFile,
  ToolDetail,
  TurnInput,
  TurnSink,
} from "../../src/agent/port.js";

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const fakeAgent = fileURLToPath(new URL("./fake-agent.ts", import.meta.url));

/**
 * argv of the fake agent, runnable from any cwd: the bundle test/global-setup.ts built for this run,
 * else (a run without that setup) the TypeScript source through tsx.
 */
export const FAKE_AGENT_COMMAND = [process.execPath, ...fakeAgentArgs()];

function fakeAgentArgs(): string[] {
  const bundle = inject("fakeAgentBundle");
  return bundle ? [bundle] : ["--import", tsxLoader, fakeAgent];
}

/** A temp dir with the fake agent's state and call log. */
export function fakeAgentDir(): {
  dir: string;
  env: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: JSON read back from the fake agent's log, asserted field by field.
  calls(method?: string): Array<{ method: string; params: any; pid: number }>;
} {
  const dir = mkdtempSync(join(tmpdir(), "pheby-acp-"));
  const log = join(dir, "calls.jsonl");
  return {
    dir,
    env: { FAKE_STATE: join(dir, "state.json"), FAKE_LOG: log },
    calls(method) {
      if (!existsSync(log)) return [];
      const all = readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      return method ? all.filter((c) => c.method === method) : all;
    },
  };
}

export type SinkEvent =
  | { type: "text"; chunk: string }
  | { type: "toolStart"; toolCallId: string; toolName: string; args?: Record<string, unknown> }
  | { type: "toolEnd"; toolCallId: string; status: string; error?: string }
  | { type: "permission"; question: PermissionQuestion }
  | { type: "clarify"; question: ClarifyQuestion }
  | { type: "file"; file: ProducedFile }
  | { type: "notice"; text: string }
  | { type: "sessionReplaced"; sessionId: string };

/** A TurnSink that records everything and answers questions with the given handlers. */
export class RecordingSink implements TurnSink {
  readonly events: SinkEvent[] = [];
  readonly withdrawn: string[] = [];
  /** `activity`: every detail reported, in order (with toolStart, toolEnd or toolDetail). */
  readonly details: Array<{ toolCallId: string; detail: ToolDetail }> = [];
  /** `activity`: the preview of each permission question that had one. */
  readonly previews: Array<{ toolCallId: string | undefined; preview: ToolContentBlock[] }> = [];

  constructor(
    private readonly answers: {
      permission?: (q: PermissionQuestion, withdraw: AbortSignal) => Promise<PermissionAnswer>;
      clarify?: (q: ClarifyQuestion, withdraw: AbortSignal) => Promise<ClarifyAnswer>;
    } = {},
  ) {}

  text(chunk: string): void {
    this.events.push({ type: "text", chunk });
  }
  /** The cumulative answer text. */
  get answer(): string {
    return this.events.map((e) => (e.type === "text" ? e.chunk : "")).join("");
  }
  of<T extends SinkEvent["type"]>(type: T): Extract<SinkEvent, { type: T }>[] {
    return this.events.filter((e): e is Extract<SinkEvent, { type: T }> => e.type === type);
  }
  toolStart({ detail, ...call }: Parameters<TurnSink["toolStart"]>[0]): void {
    this.events.push({ type: "toolStart", ...call });
    if (detail) this.details.push({ toolCallId: call.toolCallId, detail });
  }
  toolEnd({ detail, ...call }: Parameters<TurnSink["toolEnd"]>[0]): void {
    this.events.push({ type: "toolEnd", ...call });
    if (detail) this.details.push({ toolCallId: call.toolCallId, detail });
  }
  toolDetail(call: { toolCallId: string; detail: ToolDetail }): void {
    this.details.push(call);
  }
  askPermission(question: PermissionQuestion, withdraw?: AbortSignal): Promise<PermissionAnswer> {
    // The activity preview is recorded apart (`previews`), so the question reads as before.
    const { preview, ...asked } = question;
    this.events.push({ type: "permission", question: asked });
    if (preview) this.previews.push({ toolCallId: question.toolCallId, preview });
    return this.reply(question, withdraw!, this.answers.permission, "permission");
  }
  askClarification(question: ClarifyQuestion, withdraw?: AbortSignal): Promise<ClarifyAnswer> {
    this.events.push({ type: "clarify", question });
    return this.reply(question, withdraw!, this.answers.clarify, "clarify");
  }
  async file(file: ProducedFile): Promise<void> {
    this.events.push({ type: "file", file });
  }
  notice(text: string): void {
    this.events.push({ type: "notice", text });
  }
  sessionReplaced(sessionId: string): void {
    this.events.push({ type: "sessionReplaced", sessionId });
  }

  /** Answer with the handler, or wait for withdrawal (which resolves `cancelled`, as the server does). */
  private reply<Q, A>(
    q: Q,
    withdraw: AbortSignal,
    handler: ((q: Q, w: AbortSignal) => Promise<A>) | undefined,
    kind: string,
  ): Promise<A> {
    const withdrawn = new Promise<A>((resolve) => {
      const done = () => {
        this.withdrawn.push(kind);
        resolve({ outcome: "cancelled" } as A);
      };
      if (withdraw.aborted) done();
      else withdraw.addEventListener("abort", done, { once: true });
    });
    return handler ? Promise.race([handler(q, withdraw), withdrawn]) : withdrawn;
  }
}

/** An AgentHost that records unsolicited output, titles and logs. */
export class RecordingHost implements AgentHost {
  readonly unsolicitedMessages: Array<{ sessionId: string; text: string; kind?: string }> = [];
  readonly titles: Array<{ sessionId: string; title: string }> = [];
  readonly hidden: string[] = [];
  readonly logs: Array<{ level: string; obj: object; msg?: string }> = [];
  private waiters: Array<() => void> = [];

  unsolicited(message: { sessionId: string; text: string; kind?: "notice" }): void {
    this.unsolicitedMessages.push(message);
    for (const w of this.waiters.splice(0)) w();
  }
  sessionTitle(sessionId: string, title: string): void {
    this.titles.push({ sessionId, title });
  }
  hideSession(sessionId: string): void {
    this.hidden.push(sessionId);
  }
  /** Resolves at the next unsolicited message. */
  nextUnsolicited(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  readonly log = {
    debug: (obj: object, msg?: string) => this.logs.push({ level: "debug", obj, msg }),
    info: (obj: object, msg?: string) => this.logs.push({ level: "info", obj, msg }),
    warn: (obj: object, msg?: string) => this.logs.push({ level: "warn", obj, msg }),
    error: (obj: object, msg?: string) => this.logs.push({ level: "error", obj, msg }),
  };
}

/** Settings with nothing overridden. */
export const NO_SETTINGS = { model: null, effort: null, yolo: false } as const;

/** The input of one turn with default settings. */
export function turnInput(sessionId: string, text: string, extra: Partial<TurnInput> = {}): TurnInput {
  return { conversationId: "c1", sessionId, text, attachments: [], settings: NO_SETTINGS, ...extra };
}

/** Make `sink` abort `ctl` once the answer holds at least `chars` characters (cancel mid-stream). */
export function abortAfterText(sink: RecordingSink, ctl: AbortController, chars: number): void {
  const record = sink.text.bind(sink);
  sink.text = (chunk: string) => {
    record(chunk);
    if (sink.answer.length >= chars) ctl.abort();
  };
}
