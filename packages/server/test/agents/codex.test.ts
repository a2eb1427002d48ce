/**
 * Codex through `@zed-industries/codex-acp`, launched the documented way: `node_modules/.bin/codex-acp`
 * is a Node shim that runs the native agent with `spawnSync` and dies on SIGTERM without passing it
 * on (issue 13, item 4). Only the process handling is checked here: the fake LLM speaks the Chat
 * Completions API and Codex needs the Responses API, so no turn is run (docs/agents.md).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import { RecordingHost } from "../acp/harness.js";
import { AGENT_BINS, skipReason } from "./agents.js";

const reason = skipReason("codex");
if (reason) console.info(reason);

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

describe.skipIf(reason !== null)("Codex (codex-acp) over ACP", { timeout: 120_000 }, () => {
  function options(): AcpBackendOptions {
    const home = mkdtempSync(join(tmpdir(), "pheby-codex-home-"));
    mkdirSync(join(home, ".codex"));
    // A provider on a closed loopback port: nothing may leave the machine.
    writeFileSync(
      join(home, ".codex", "config.toml"),
      [
        'model = "fake-model"',
        'model_provider = "fake"',
        "[model_providers.fake]",
        'name = "Fake"',
        'base_url = "http://127.0.0.1:9/v1"',
        'env_key = "FAKE_KEY"',
        'wire_api = "responses"',
        "",
      ].join("\n"),
    );
    return {
      command: [AGENT_BINS.codex],
      cwd: mkdtempSync(join(tmpdir(), "pheby-codex-")),
      env: { HOME: home, CODEX_HOME: join(home, ".codex"), FAKE_KEY: "sk-fake" },
      allowedFileRoots: [],
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
      expect(running(native!)).toBe(false);
      await backend.createSession("c2");
    } finally {
      await backend.close();
    }
  });
});
