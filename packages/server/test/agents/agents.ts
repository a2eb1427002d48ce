/**
 * Where the real agents live and whether their suites run. They run only under
 * `pnpm test:agents` (PHEBY_AGENT_TESTS=1), which installs them first; a plain
 * `pnpm test` skips them with the reason printed.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import type { AgentBackend } from "../../src/agent/port.js";
import { RecordingSink, turnInput } from "../acp/harness.js";

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
