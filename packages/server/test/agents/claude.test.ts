/**
 * Claude Code through `@zed-industries/claude-code-acp`, with `ANTHROPIC_BASE_URL` pointing at the
 * fake LLM's Anthropic Messages dialect. `IS_SANDBOX=1` lets it run as root (CI runs as root).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { AgentBackend } from "../../src/agent/port.js";
import { type FakeLlm, startFakeLlm, textOf } from "../acp/fake-llm.js";
import { RecordingHost, RecordingSink } from "../acp/harness.js";
import { AGENT_BINS, completedTurn, skipReason } from "./agents.js";
import { describeThroughPheby } from "./through-pheby.js";

const reason = skipReason("claude");
if (reason) console.info(reason);

describe.skipIf(reason !== null)("Claude Code over ACP", { timeout: 120_000 }, () => {
  let llm: FakeLlm;
  let backend: AgentBackend;
  let work: string;
  let options: AcpBackendOptions;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "pheby-claude-"));
    llm = await startFakeLlm(({ messages, tools }) => {
      const last = messages[messages.length - 1];
      if (last?.role === "tool") return { text: "The command finished." };
      const user = textOf([...messages].reverse().find((m) => m.role === "user"));
      const file = /(?:approve the note|make the file)/.exec(user)?.[0];
      if (file && tools.includes("Bash")) {
        const target = file === "approve the note" ? "note-approved.txt" : "made-by-claude.txt";
        const command = `echo pheby > ${join(work, target)}`;
        return { toolCalls: [{ name: "Bash", arguments: { command, description: "Write a file" } }] };
      }
      if (user.includes("talk slowly")) return { text: "word ".repeat(400), chunkDelayMs: 50 };
      return { text: "Hello from the fake model." };
    });
    options = {
      command: [AGENT_BINS.claude],
      cwd: work,
      env: {
        HOME: mkdtempSync(join(tmpdir(), "pheby-claude-home-")),
        ANTHROPIC_BASE_URL: llm.baseUrl.replace(/\/v1$/, ""),
        ANTHROPIC_API_KEY: "sk-ant-fake",
        IS_SANDBOX: "1",
        // Nothing but the fake model: no telemetry, error reports or update checks.
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      },
      allowedFileRoots: [work],
    };
    backend = createAcpBackend(options);
    await backend.start(new RecordingHost());
  });

  afterAll(async () => {
    await backend?.close();
    await llm?.close();
  });

  it("streams an answer", async () => {
    const { sink } = await completedTurn(backend, "say hello");
    expect(sink.answer).toContain("Hello from the fake model.");
  });

  it("asks for Bash; the tool is named from _meta and shows the command, not {} and 'Terminal'", async () => {
    const once = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const { sink } = await completedTurn(backend, "please make the file", once);
    expect(sink.of("permission")[0]?.question.choices).toEqual(["once", "always", "deny"]);
    const starts = sink.of("toolStart");
    expect(new Set(starts.map((s) => s.toolName))).toEqual(new Set(["Bash"]));
    expect(starts.at(-1)?.args).toMatchObject({
      command: `echo pheby > ${join(work, "made-by-claude.txt")}`,
    });
    expect(readFileSync(join(work, "made-by-claude.txt"), "utf8").trim()).toBe("pheby");
  });

  describeThroughPheby({
    options: () => options,
    helloPrompt: "say hello",
    slowPrompt: "talk slowly",
    toolPrompt: "please approve the note",
    toolName: "Bash",
    toolCommand: () => `echo pheby > ${join(work, "note-approved.txt")}`,
    toolFile: () => join(work, "note-approved.txt"),
    choices: ["once", "always", "deny"],
  });
});
