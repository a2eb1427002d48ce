/**
 * Several real agents behind one Pheby server (the `workspaces` extension): how Qwen Code and
 * OpenCode are launched against one fake LLM, the fake model's script for the multi-agent suites
 * (a shell command named in the prompt, multi-step file edits), real workspace directories and git
 * repositories, and the pids of the agent processes the server spawned.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureGit } from "@pheby/testkit";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import type { ChatMessage, FakeLlm, LlmRequest, Reply } from "../acp/fake-llm.js";
import { textOf } from "../acp/fake-llm.js";
import type { PhebyAgents } from "../acp/pheby.js";
import { AGENT_BINS, AGENTS_DIR, HELLO, tempHome } from "./agents.js";

/** A fresh, real (symlink-free) temporary directory named after `label`. */
export function tempWorkspace(label: string): string {
  return realpathSync(mkdtempSync(join(tmpdir(), `pheby-${label}-`)));
}

/** Git with no system or global configuration (the test's own repositories). */
export const git = fixtureGit;

/** A git repository at a fresh temp dir with `files` committed on `main`. */
export function gitWorkspace(label: string, files: Record<string, string>): string {
  const dir = tempWorkspace(label);
  git(dir, "init", "-q", "-b", "main");
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "initial");
  return dir;
}

/**
 * `options` with its command wrapped so the agent process appends its pid to `pidFile` and then
 * becomes the agent (`exec`: the pid is the one the server spawned and signals).
 */
export function recordingPid(options: AcpBackendOptions, pidFile: string): AcpBackendOptions {
  return {
    ...options,
    command: ["/bin/sh", "-c", `echo $$ >> '${pidFile}'; exec "$0" "$@"`, ...options.command],
  };
}

/** The pid of the agent process the server spawned last (see {@link recordingPid}). */
export function lastPid(pidFile: string): number {
  const pids = readFileSync(pidFile, "utf8").trim().split("\n");
  return Number(pids.at(-1));
}

/** The working directory of process `pid`. */
export function cwdOf(pid: number): string {
  return realpathSync(`/proc/${pid}/cwd`);
}

/**
 * Run an agent's own CLI to its end, with no stdin (CLIs append piped stdin to a one-shot prompt, so an
 * open pipe would keep them waiting) and asynchronously (the fake model answering it runs in this
 * process). Rejects with its output when it fails or outlives `timeoutMs`.
 */
export function runCli(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      // PWD too: OpenCode takes its project directory from it, not from its working directory.
      env: { ...process.env, PWD: options.cwd, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(" ")} ended with ${signal ?? code}: ${output}`));
    });
  });
}

/** Qwen Code (`qwen --acp`) started in `cwd` against `llm`, in `yolo` mode (no permission questions). */
export function qwenOptions(llm: FakeLlm, cwd: string, home = tempHome("qwen")): AcpBackendOptions {
  return {
    command: [AGENT_BINS.qwen, "--acp"],
    cwd,
    env: { HOME: home, ...qwenModelEnv(llm) },
    mode: "yolo",
    allowedFileRoots: [], // the server adds its workspaces
  };
}

/** The environment that points Qwen Code (ACP or its own CLI) at the fake LLM. */
export function qwenModelEnv(llm: FakeLlm): Record<string, string> {
  return { OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: llm.baseUrl, OPENAI_MODEL: "fake-model" };
}

/**
 * OpenCode (`opencode acp`) started in `cwd` against `llm`, its configuration passed in the
 * environment (`OPENCODE_CONFIG_CONTENT`) so no `opencode.json` lands in a workspace; bash and
 * edits allowed without asking.
 */
export function opencodeOptions(llm: FakeLlm, cwd: string, home = tempHome("opencode")): AcpBackendOptions {
  return {
    command: [AGENT_BINS.opencode, "acp"],
    cwd,
    env: opencodeEnv(llm, home),
    allowedFileRoots: [], // the server adds its workspaces
  };
}

/** The environment that points OpenCode (ACP or its own CLI) at the fake LLM, with `home` as its HOME. */
export function opencodeEnv(llm: FakeLlm, home: string): Record<string, string> {
  const config = {
    autoupdate: false,
    share: "disabled",
    model: "fake/fake-model",
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: llm.baseUrl, apiKey: "sk-fake" },
        models: { "fake-model": { name: "Fake" } },
      },
    },
    permission: { bash: "allow", edit: "allow" },
  };
  return {
    HOME: home,
    // As opencode.test.ts: the plugin OpenCode installs on first start stays with the installed agent.
    XDG_CONFIG_HOME: join(AGENTS_DIR, "opencode", "config"),
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
  };
}

/** The prompt whose answer runs `pwd && ls` in the agent's shell, then repeats what it printed. */
export const WHERE_PROMPT = "where are you working";
/** The prefix of the model's answer once the shell command returned. */
export const TOOL_SAID = "The shell said: ";
/** The prompt whose answer streams slowly (about 20 s), to be interrupted. */
export const SLOW_PROMPT = "talk slowly";

/** One step of a scripted multi-step turn: the tool calls for the `step`-th model request of the turn. */
export type Steps = (tools: string[], step: number) => Reply | undefined;

/**
 * The fake model's script for the multi-agent suites. A prompt containing a key of `steps` runs
 * those steps (one per model request of the turn, counted by the tool results since the user's
 * message), then answers {@link TOOL_SAID} and the last tool result. `run: <command>` runs that shell
 * command; {@link WHERE_PROMPT} runs `pwd && ls`. Requests without tools (OpenCode's title
 * generation) are answered with a title; anything else with {@link HELLO}.
 */
export function multiAgentScript(steps: Record<string, Steps> = {}): (req: LlmRequest) => Reply {
  return ({ messages, tools }) => {
    if (tools.length === 0) return { text: "A title" }; // OpenCode's title generation
    const since = messages.slice(messages.map((m) => m.role).lastIndexOf("user"));
    const user = textOf(since[0]);
    const results = since.filter((m) => m.role === "tool").map(textOf);
    const calls = since.filter((m: ChatMessage) => m.role === "assistant" && m.tool_calls?.length).length;
    if (user.includes(SLOW_PROMPT)) return { text: "word ".repeat(400), chunkDelayMs: 50 };
    const key = Object.keys(steps).find((k) => user.includes(k));
    if (key) {
      const reply = steps[key]!(tools, calls);
      if (reply) return reply;
      return { text: TOOL_SAID + (results.at(-1) ?? "") };
    }
    const command = !shellTool(tools)
      ? undefined
      : user.includes(WHERE_PROMPT)
        ? "pwd && ls"
        : /run: (.+)$/m.exec(user)?.[1];
    if (command) {
      if (calls === 0) return { toolCalls: [shellCall(tools, command)] };
      return { text: TOOL_SAID + (results.at(-1) ?? "") };
    }
    return { text: HELLO };
  };
}

/** The agent's shell tool: Qwen Code's `run_shell_command`, OpenCode's `bash`. */
function shellTool(tools: string[]): string | undefined {
  return ["run_shell_command", "bash"].find((t) => tools.includes(t));
}

/** A call of the agent's shell tool running `command` in the session's directory. */
export function shellCall(
  tools: string[],
  command: string,
): { name: string; arguments: Record<string, unknown> } {
  const name = shellTool(tools) ?? "run_shell_command";
  const args: Record<string, unknown> = { command, description: "Run a command" };
  if (name === "run_shell_command") args.is_background = false;
  return { name, arguments: args };
}

/** Answer every approval the server asks `p`'s client "once" (agents that ask despite their mode). */
export function approveEverything(p: PhebyAgents): void {
  p.client.on("approval.request", (m) => {
    p.client
      .request({ type: "approval.respond", approval_id: m.approval_id, choice: "once" })
      .catch(() => {});
  });
}

/** Every text the fake model received as a tool result. */
export function toolResults(llm: FakeLlm): string[] {
  return llm.requests.flatMap((r) => r.messages.filter((m) => m.role === "tool").map(textOf));
}
