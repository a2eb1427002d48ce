/**
 * Where the real agents live and whether their suites run. They run only under
 * `pnpm test:agents` (PHEBY_AGENT_TESTS=1), which installs them first; a plain
 * `pnpm test` skips them with the reason printed.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { AgentBackend } from "../../src/agent/port.js";
import { type ChatMessage, type FakeLlm, type Reply, startFakeLlm, textOf } from "../acp/fake-llm.js";
import { abortAfterText, RecordingHost, RecordingSink, turnInput } from "../acp/harness.js";

/** Where `scripts/install-agents.sh` installs the agents. */
export const AGENTS_DIR = process.env.PHEBY_AGENTS_DIR ?? join(homedir(), ".cache", "pheby-agents");

/** Installed agent binaries. */
export const AGENT_BINS = {
  qwen: join(AGENTS_DIR, "qwen", "node_modules", ".bin", "qwen"),
  hermes: join(AGENTS_DIR, "hermes", "bin", "hermes"),
  opencode: join(AGENTS_DIR, "opencode", "node_modules", ".bin", "opencode"),
  codex: join(AGENTS_DIR, "codex", "node_modules", ".bin", "codex-acp"),
  gemini: join(AGENTS_DIR, "gemini", "node_modules", ".bin", "gemini"),
  claude: join(AGENTS_DIR, "claude", "node_modules", ".bin", "claude-code-acp"),
};

/** Why the suite of `agent` does not run, or null when it does. Requested but missing agents fail. */
export function skipReason(agent: keyof typeof AGENT_BINS): string | null {
  if (process.env.PHEBY_AGENT_TESTS !== "1") {
    return `real-agent suite (${agent}) skipped: run \`pnpm --filter @pheby/server test:agents\` to install and run it`;
  }
  if (!existsSync(AGENT_BINS[agent])) {
    throw new Error(
      `${agent} is not installed at ${AGENT_BINS[agent]}: run packages/server/scripts/install-agents.sh`,
    );
  }
  return null;
}

/** Per-test and hook timeout of each suite: agents boot slowly, Hermes (Python) slowest. */
const TIMEOUT_MS: Record<keyof typeof AGENT_BINS, number> = {
  qwen: 120_000,
  hermes: 180_000,
  opencode: 120_000,
  codex: 120_000,
  gemini: 120_000,
  claude: 120_000,
};

/** Declare the suite of `agent`: skipped, with the reason printed, unless it runs (see {@link skipReason}). */
export function describeAgent(agent: keyof typeof AGENT_BINS, title: string, body: () => void): void {
  const reason = skipReason(agent);
  if (reason) console.info(reason);
  describe.skipIf(reason !== null)(title, { timeout: TIMEOUT_MS[agent] }, body);
}

/**
 * Run `text` as one turn (in `sessionId`, else a new session) and expect it to complete.
 * Returns the sink, with what the agent streamed and asked.
 */
export async function completedTurn(
  backend: AgentBackend,
  text: string,
  sink = new RecordingSink(),
  sessionId?: string,
): Promise<{ sink: RecordingSink; sessionId: string }> {
  const id = sessionId ?? (await backend.createSession("c")).sessionId;
  const result = await backend.prompt(turnInput(id, text), sink, new AbortController().signal);
  expect(result).toEqual({ status: "completed" });
  return { sink, sessionId: id };
}

/**
 * Run "talk slowly" (in `sessionId`, else a new session), cancel it once 20 characters have
 * streamed and expect it to end cancelled.
 */
export async function cancelledTurn(
  backend: AgentBackend,
  sessionId?: string,
): Promise<{ sink: RecordingSink; sessionId: string }> {
  const id = sessionId ?? (await backend.createSession("c")).sessionId;
  const ctl = new AbortController();
  const sink = new RecordingSink();
  abortAfterText(sink, ctl, 20);
  expect(await backend.prompt(turnInput(id, "talk slowly"), sink, ctl.signal)).toEqual({
    status: "cancelled",
  });
  return { sink, sessionId: id };
}

/** What every agent's fake model answers to the plain prompts. */
export const HELLO = "Hello from the fake model.";

/** The prompt the shared script answers with reasoning (naming the work dir) before {@link THOUGHT_ANSWER}. */
export const THINK_PROMPT = "please think first";
export const THOUGHT_ANSWER = "Thought it through.";
/** The model's reasoning for {@link THINK_PROMPT}: it names a file of the work dir by its absolute path. */
export const thinkingAbout = (work: string) =>
  `Thinking about ${join(work, "activity.txt")} first. Then answer.`;

/**
 * The agent-specific part of the fake model's script: the reply to the user's latest text (with the
 * tool names the agent offered, and the suite's work dir), or undefined for the shared script. The
 * shared script answers a tool result with "The command finished.", "talk slowly" with a slow
 * stream, {@link THINK_PROMPT} with reasoning before its answer, and anything else with {@link HELLO}.
 */
export type AgentScript = (user: string, tools: string[], work: string) => Reply | undefined;

/** A suite's fake LLM and work dir, filled in by its `beforeAll`. */
export interface LlmFixture {
  llm: FakeLlm;
  /** A fresh temporary dir: the agent's cwd and its only allowed file root. */
  work: string;
}

/** Register a fake LLM scripted by `script` (and a work dir) for the lifetime of the calling suite. */
export function useFakeLlm(agent: keyof typeof AGENT_BINS, script: AgentScript): LlmFixture {
  const fixture = {} as LlmFixture;
  beforeAll(async () => {
    const work = mkdtempSync(join(tmpdir(), `pheby-${agent}-`));
    fixture.work = work;
    fixture.llm = await startFakeLlm(({ messages, tools }) => {
      const user = textOf([...messages].reverse().find((m) => m.role === "user"));
      const pheby = phebyToolTurn(user, messages, tools);
      if (pheby) return pheby;
      if (messages[messages.length - 1]?.role === "tool") return { text: "The command finished." };
      const own = script(user, tools, work);
      if (own) return own;
      if (user.includes(THINK_PROMPT)) return { reasoning: thinkingAbout(work), text: THOUGHT_ANSWER };
      if (user.includes("talk slowly")) return { text: "word ".repeat(400), chunkDelayMs: 50 };
      return { text: HELLO };
    });
  });
  afterAll(() => fixture.llm?.close());
  return fixture;
}

/** Prefix of the answer the fake model gives once a Pheby tool returned. */
export const TOOL_RESULT = "Pheby's tool said: ";

/**
 * The fake model's part for Pheby's tools. The user's `pheby <tool> <json arguments>` makes it call
 * that tool as the agent names it (`mcp__pheby__<tool>`, OpenCode's `pheby_<tool>`), then answer
 * {@link TOOL_RESULT} and the result. Qwen Code defers MCP tools behind `tool_search`/`tool_call`:
 * the model looks the tool up first (again while Qwen is still connecting its MCP servers), then
 * calls it through `tool_call`. Undefined when this is not such a turn (e.g. a title request).
 */
function phebyToolTurn(user: string, messages: ChatMessage[], tools: string[]): Reply | undefined {
  const wanted = /^pheby (\w+) (\{.*\})\s*$/s.exec(user.trim());
  if (!wanted) return undefined;
  const [, tool, json] = wanted as unknown as [string, string, string];
  const args = JSON.parse(json) as Record<string, unknown>;
  const since = messages.slice(messages.map((m) => m.role).lastIndexOf("user"));
  const results = since.filter((m) => m.role === "tool").map(textOf);
  const direct = tools.find((t) => t === `mcp__pheby__${tool}` || t === `pheby_${tool}`);
  if (direct) {
    return results.length === 0
      ? { toolCalls: [{ name: direct, arguments: args }] }
      : { text: TOOL_RESULT + results.at(-1) };
  }
  if (!tools.includes("tool_search") || !tools.includes("tool_call")) return undefined;
  const last = results.at(-1);
  const name = `mcp__pheby__${tool}`;
  if (last === undefined || (/Not found/.test(last) && results.length < 40)) {
    return { toolCalls: [{ name: "tool_search", arguments: { query: `select:${name}` } }] };
  }
  if (last.includes("<functions>"))
    return { toolCalls: [{ name: "tool_call", arguments: { name, arguments: args } }] };
  return { text: TOOL_RESULT + last };
}

/** A suite's fake LLM, work dir and started agent, filled in by its `beforeAll`. */
export interface AgentFixture extends LlmFixture {
  backend: AgentBackend;
  /** How the agent was launched (for the through-Pheby tests, which launch their own). */
  options: AcpBackendOptions;
}

/**
 * Register a fake LLM (as {@link useFakeLlm}) and one agent launched with `launch(fixture)`, started
 * for the lifetime of the calling suite and closed before the fake LLM.
 */
export function useAgent(
  agent: keyof typeof AGENT_BINS,
  script: AgentScript,
  launch: (fixture: LlmFixture) => AcpBackendOptions,
): AgentFixture {
  const fixture = useFakeLlm(agent, script) as AgentFixture;
  beforeAll(async () => {
    fixture.options = launch(fixture);
    fixture.backend = createAcpBackend(fixture.options);
    await fixture.backend.start(new RecordingHost());
  });
  // Registered after useFakeLlm's: vitest runs afterAll hooks in reverse, so the agent goes first.
  afterAll(() => fixture.backend?.close());
  return fixture;
}

/** A fresh temporary HOME for one agent launch. */
export function tempHome(agent: keyof typeof AGENT_BINS): string {
  return mkdtempSync(join(tmpdir(), `pheby-${agent}-home-`));
}
