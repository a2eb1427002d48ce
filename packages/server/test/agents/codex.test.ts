/**
 * Codex through `@zed-industries/codex-acp`, launched the documented way: `node_modules/.bin/codex-acp` is a
 * Node shim that runs the native agent with `spawnSync` and dies on SIGTERM without passing it on, so
 * shutdown must signal the agent's whole process group. Turns run against the fake LLM's Responses API
 * dialect (`wire_api = "responses"` in `$CODEX_HOME/config.toml`).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { Reply } from "../acp/fake-llm.js";
import { RecordingHost, RecordingSink } from "../acp/harness.js";
import {
  ACTIVITY_AFTER,
  ACTIVITY_FILE,
  CHANGE_PROMPT,
  describeActivity,
  EDIT_PROMPT,
  PLAN_PROMPT,
  PLAN_STEPS,
  SHELL_PROMPT,
  shellCommand,
} from "./activity.js";
import { AGENT_BINS, completedTurn, describeAgent, HELLO, tempHome, useFakeLlm } from "./agents.js";
import { describeModes, requestText } from "./modes.js";
import { describeThroughPheby } from "./through-pheby.js";

/** PIDs of the running children of `pid` (zombies excluded). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [, state, ppid] = /\) (\S) (\d+)/.exec(stat) ?? [];
      if (Number(ppid) === pid && state !== "Z") out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const running = (pid: number) => {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

/**
 * Codex's part of the activity script: `apply_patch` is a freeform tool (its input is the patch), the
 * shell is `exec_command` (asked for with escalation, so it asks), the plan `update_plan`.
 */
function activityTurn(user: string, tools: string[], work: string): Reply | undefined {
  const patch = (body: string) => ({
    toolCalls: [{ name: "apply_patch", input: `*** Begin Patch\n${body}*** End Patch\n` }],
  });
  const file = join(work, ACTIVITY_FILE);
  if (user.includes(EDIT_PROMPT) && tools.includes("apply_patch"))
    return patch(`*** Add File: ${file}\n${ACTIVITY_AFTER.replace(/^/gm, "+").slice(0, -1)}`);
  if (user.includes(CHANGE_PROMPT) && tools.includes("apply_patch"))
    return patch(`*** Update File: ${file}\n@@\n one\n-TWO\n+2\n three\n`);
  if (user.includes(SHELL_PROMPT) && tools.includes("exec_command")) {
    const args = { cmd: shellCommand(), justification: "Show", sandbox_permissions: "require_escalated" };
    return { toolCalls: [{ name: "exec_command", arguments: args }] };
  }
  if (user.includes(PLAN_PROMPT) && tools.includes("update_plan")) {
    const plan = PLAN_STEPS.map(({ content, status }) => ({ step: content, status }));
    return { toolCalls: [{ name: "update_plan", arguments: { plan } }] };
  }
  return undefined;
}

describeAgent("codex", "Codex (codex-acp) over ACP", () => {
  // Each test launches its own agent (they kill it), so only the fake LLM is shared.
  const fake = useFakeLlm("codex", (user, tools, work) => {
    const activity = activityTurn(user, tools, work);
    if (activity) return activity;
    const file = /approve the note|make the file/.exec(user)?.[0];
    if (!file || !tools.includes("exec_command")) return undefined;
    const cmd = write(file === "make the file" ? "made-by-codex.txt" : "note.txt");
    // Escalation makes Codex ask, whatever its sandbox can do here.
    const args = { cmd, justification: "Write a file", sandbox_permissions: "require_escalated" };
    return { toolCalls: [{ name: "exec_command", arguments: args }] };
  });
  /** The shell command the fake model asks Codex to run for `file`. */
  const write = (file: string) => `echo pheby > ${join(fake.work, file)}`;
  /** The same command as the server shows it: its own directories as placeholders (docs/security.md). */
  const shown = (file: string) => `echo pheby > <workdir>/${file}`;

  function options(): AcpBackendOptions {
    const home = tempHome("codex");
    mkdirSync(join(home, ".codex"));
    // A provider on a closed loopback port: nothing may leave the machine.
    writeFileSync(
      join(home, ".codex", "config.toml"),
      [
        'model = "gpt-5.4-mini"', // a name Codex has metadata for (else it warns in the answer)
        'model_provider = "fake"',
        "[model_providers.fake]",
        'name = "Fake"',
        `base_url = "${fake.llm.baseUrl}"`,
        'env_key = "FAKE_KEY"',
        'wire_api = "responses"',
        "",
      ].join("\n"),
    );
    return {
      command: [AGENT_BINS.codex],
      cwd: fake.work,
      env: { HOME: home, CODEX_HOME: join(home, ".codex"), FAKE_KEY: "sk-fake" },
      allowedFileRoots: [fake.work],
      shutdownTimeoutMs: 3_000,
    };
  }

  it("close() ends the native agent behind the shim (before: the server never finished shutting down)", async () => {
    const backend = createAcpBackend(options());
    await backend.start(new RecordingHost());
    await backend.createSession("c");
    const shim = (backend as unknown as { proc: { child: { pid: number } } }).proc.child.pid;
    const native = childrenOf(shim);
    expect(native).toHaveLength(1);
    expect(readFileSync(`/proc/${native[0]}/cmdline`, "utf8")).toContain("codex-acp-linux");
    await backend.close();
    expect(running(native[0]!)).toBe(false);
  });

  it("a shim that dies is seen as a crash; the next request starts a new agent", async () => {
    const host = new RecordingHost();
    const backend = createAcpBackend(options());
    await backend.start(host);
    try {
      await backend.createSession("c");
      const shim = (backend as unknown as { proc: { child: { pid: number } } }).proc.child.pid;
      const [native] = childrenOf(shim);
      process.kill(shim, "SIGKILL"); // the native agent keeps the pipes
      await expect
        .poll(() => host.logs.some((l) => l.msg === "agent process exited"), { timeout: 30_000 })
        .toBe(true);
      // The group's SIGKILL has been sent; the kernel takes a moment to end a large process.
      await expect.poll(() => running(native!), { timeout: 2_000 }).toBe(false);
      await backend.createSession("c2");
    } finally {
      await backend.close();
    }
  });

  it("streams an answer; an escalated command asks (once, always, deny) and once runs it", async () => {
    const backend = createAcpBackend(options());
    await backend.start(new RecordingHost());
    try {
      const { sink: hello, sessionId } = await completedTurn(backend, "say hello");
      expect(hello.answer).toBe(HELLO);
      const once = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
      const { sink } = await completedTurn(backend, "make the file", once, sessionId);
      expect(sink.of("permission")[0]?.question).toMatchObject({
        command: shown("made-by-codex.txt"),
        choices: ["once", "always", "deny"],
      });
      expect(readFileSync(join(fake.work, "made-by-codex.txt"), "utf8").trim()).toBe("pheby");
    } finally {
      await backend.close();
    }
  });

  describeThroughPheby({
    fixture: fake,
    options,
    // Codex names no tool: the title (the command itself) is all there is.
    toolName: () => shown("note.txt"),
    toolFile: "note.txt",
    choices: ["once", "always", "deny"],
  });

  describeModes({
    fixture: fake,
    options,
    command: "review",
    modes: ["read-only", "auto", "full-access"],
    autoApproves: ["auto", "full-access"],
    // No plan mode: read-only is the nearest. Codex states its sandbox in the model's instructions
    // (again when it changes); in a workspace it does not trust it starts read-only, so the turn
    // before runs in `auto`.
    plan: {
      modeId: "read-only",
      from: "auto",
      // The request carries the whole thread: the newest statement counts.
      inPlan: (r) =>
        [...requestText(r).matchAll(/`sandbox_mode` is `([\w-]+)`/g)].at(-1)?.[1] === "read-only",
    },
  });

  describeActivity({
    fixture: fake,
    options,
    write: { events: true, preview: true },
    // Updating a file needs its sandbox helper (bubblewrap) in the sandboxed modes; full-access has none.
    change: { events: "fragment", mode: "full-access" },
    shell: true,
    thoughts: true,
    plan: true,
    usage: { cost: false },
  });
});
