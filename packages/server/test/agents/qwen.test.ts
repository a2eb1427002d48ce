/**
 * Qwen Code (`qwen --acp`) driven through the ACP backend, talking to the fake LLM.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { AgentBackend } from "../../src/agent/port.js";
import { type FakeLlm, startFakeLlm, textOf } from "../acp/fake-llm.js";
import { abortAfterText, RecordingHost, RecordingSink, turnInput } from "../acp/harness.js";
import { AGENT_BINS, skipReason } from "./agents.js";
import { describeThroughPheby } from "./through-pheby.js";

const reason = skipReason("qwen");
if (reason) console.info(reason);

describe.skipIf(reason !== null)("Qwen Code over ACP", { timeout: 120_000 }, () => {
  let llm: FakeLlm;
  let backend: AgentBackend;
  let host: RecordingHost;
  let work: string;
  let options: AcpBackendOptions;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "pheby-qwen-"));
    const target = join(work, "made-by-qwen.txt");
    llm = await startFakeLlm(({ messages }) => {
      const last = messages[messages.length - 1];
      if (last?.role === "tool") return { text: "The command finished." };
      const user = textOf([...messages].reverse().find((m) => m.role === "user"));
      if (user.includes("approve the note")) {
        return {
          toolCalls: [
            {
              name: "run_shell_command",
              arguments: {
                command: `echo pheby > ${join(work, "note-approved.txt")}`,
                description: "Write a note",
                is_background: false,
              },
            },
          ],
        };
      }
      if (user.includes("make the file")) {
        return {
          toolCalls: [
            {
              name: "run_shell_command",
              arguments: {
                command: `echo pheby > ${target}`,
                description: "Write a file",
                is_background: false,
              },
            },
          ],
        };
      }
      if (user.includes("talk slowly")) return { text: "word ".repeat(400), chunkDelayMs: 50 };
      return { text: "Hello from the fake model." };
    });
    const home = mkdtempSync(join(tmpdir(), "pheby-qwen-home-"));
    host = new RecordingHost();
    options = {
      command: [AGENT_BINS.qwen, "--acp"],
      cwd: work,
      env: {
        HOME: home,
        OPENAI_API_KEY: "sk-fake",
        OPENAI_BASE_URL: llm.baseUrl,
        OPENAI_MODEL: "fake-model",
      },
      allowedFileRoots: [work],
      mode: "default", // Qwen's default mode is `auto`, which does not ask permission.
    };
    backend = createAcpBackend(options);
    await backend.start(host);
  });

  afterAll(async () => {
    await backend?.close();
    await llm?.close();
  });

  it("creates a session and streams an answer", async () => {
    const { sessionId } = await backend.createSession("c");
    const sink = new RecordingSink();
    const result = await backend.prompt(
      turnInput(sessionId, "say hello"),
      sink,
      new AbortController().signal,
    );
    expect(result).toEqual({ status: "completed" });
    expect(sink.answer).toContain("Hello from the fake model.");
    expect(llm.requests.some((r) => r.tools.includes("run_shell_command"))).toBe(true);
  });

  it("asks permission for a shell tool call; answering once runs it", async () => {
    const { sessionId } = await backend.createSession("c");
    const sink = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const result = await backend.prompt(
      turnInput(sessionId, "please make the file"),
      sink,
      new AbortController().signal,
    );
    expect(result).toEqual({ status: "completed" });
    const [asked] = sink.of("permission");
    expect(asked?.question.choices).toEqual(["once", "always", "deny"]);
    const target = join(work, "made-by-qwen.txt");
    expect(existsSync(target)).toBe(true);
    expect(readFileSync(target, "utf8").trim()).toBe("pheby");
    const ends = sink.of("toolEnd");
    expect(ends.some((e) => e.status === "completed")).toBe(true);
    expect(sink.of("toolStart").length).toBeGreaterThan(0);
    expect(sink.answer).toContain("The command finished.");
  });

  it("reports its models and declared capabilities", async () => {
    await backend.ensureReady?.();
    const catalogue = await backend.catalogue!();
    console.info(
      "qwen catalogue",
      JSON.stringify(catalogue),
      "capabilities",
      JSON.stringify(backend.capabilities),
    );
    expect(catalogue.providers.flatMap((p) => p.models).some((m) => m.includes("fake-model"))).toBe(true);
  });

  it("cancels a slow run", async () => {
    const { sessionId } = await backend.createSession("c");
    const ctl = new AbortController();
    const sink = new RecordingSink();
    abortAfterText(sink, ctl, 20);
    const result = await backend.prompt(turnInput(sessionId, "talk slowly"), sink, ctl.signal);
    expect(result).toEqual({ status: "cancelled" });
    expect(sink.answer.length).toBeLessThan("word ".repeat(400).length);
    // The agent is still healthy afterwards.
    const again = new RecordingSink();
    expect(
      await backend.prompt(turnInput(sessionId, "say hello"), again, new AbortController().signal),
    ).toEqual({
      status: "completed",
    });
  });

  describeThroughPheby({
    options: () => options,
    helloPrompt: "say hello",
    slowPrompt: "talk slowly",
    toolPrompt: "please approve the note",
    toolName: "Shell", // Qwen titles the ACP tool call by its display name
    toolFile: () => join(work, "note-approved.txt"),
    choices: ["once", "always", "deny"],
  });
});
