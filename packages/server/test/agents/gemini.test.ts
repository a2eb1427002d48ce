/**
 * Gemini CLI (`gemini --acp`) driven through the ACP backend, with `GOOGLE_GEMINI_BASE_URL` pointing
 * at the fake LLM's Gemini API dialect and an API-key login in a temporary `~/.gemini/settings.json`.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { AgentBackend } from "../../src/agent/port.js";
import { type FakeLlm, startFakeLlm, textOf } from "../acp/fake-llm.js";
import { RecordingHost, RecordingSink } from "../acp/harness.js";
import { AGENT_BINS, completedTurn, skipReason } from "./agents.js";
import { describeThroughPheby } from "./through-pheby.js";

const reason = skipReason("gemini");
if (reason) console.info(reason);

describe.skipIf(reason !== null)("Gemini CLI over ACP", { timeout: 120_000 }, () => {
  let llm: FakeLlm;
  let backend: AgentBackend;
  let work: string;
  let options: AcpBackendOptions;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "pheby-gemini-"));
    llm = await startFakeLlm(({ messages, tools }) => {
      const last = messages[messages.length - 1];
      if (last?.role === "tool") return { text: "The command finished." };
      const user = textOf([...messages].reverse().find((m) => m.role === "user"));
      const file = /(?:approve the note|make the file|append again)/.exec(user)?.[0];
      if (file && tools.includes("run_shell_command")) {
        const target = file === "approve the note" ? "note-approved.txt" : "made-by-gemini.txt";
        const command = `echo pheby >> ${join(work, target)}`;
        return { toolCalls: [{ name: "run_shell_command", arguments: { command, description: "Write" } }] };
      }
      if (user.includes("talk slowly")) return { text: "word ".repeat(400), chunkDelayMs: 50 };
      return { text: "Hello from the fake model." };
    });
    const home = mkdtempSync(join(tmpdir(), "pheby-gemini-home-"));
    mkdirSync(join(home, ".gemini"));
    writeFileSync(
      join(home, ".gemini", "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        model: { name: "gemini-2.5-flash" },
      }),
    );
    options = {
      command: [AGENT_BINS.gemini, "--acp"],
      cwd: work,
      env: {
        HOME: home,
        GEMINI_API_KEY: "fake-key",
        GOOGLE_GEMINI_BASE_URL: llm.baseUrl.replace(/\/v1$/, ""),
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

  it("'Allow for this session' is the session choice: answered once, the next command is not asked", async () => {
    const session = new RecordingSink({
      permission: async () => ({ outcome: "selected", choice: "session" }),
    });
    const { sink, sessionId } = await completedTurn(backend, "please make the file", session);
    expect(sink.of("permission")[0]?.question.choices).toEqual(["once", "session", "deny"]);
    // Gemini names the call `run_shell_command__…` and titles it with the command.
    expect(sink.of("toolStart").map((t) => t.toolName)).toEqual(["run_shell_command"]);
    const again = (await completedTurn(backend, "append again", new RecordingSink(), sessionId)).sink;
    expect(again.of("permission")).toEqual([]); // the session grant holds
    expect(readFileSync(join(work, "made-by-gemini.txt"), "utf8")).toBe("pheby\npheby\n");
  });

  describeThroughPheby({
    options: () => options,
    helloPrompt: "say hello",
    slowPrompt: "talk slowly",
    toolPrompt: "please approve the note",
    toolName: "run_shell_command",
    toolFile: () => join(work, "note-approved.txt"),
    choices: ["once", "session", "deny"],
  });
});
