/**
 * Hermes Agent (`hermes acp`) driven through the ACP backend, with a temporary
 * HERMES_HOME whose config.yaml points at the fake LLM as a custom provider.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { AgentBackend } from "../../src/agent/port.js";
import { type FakeLlm, startFakeLlm, textOf } from "../acp/fake-llm.js";
import { abortAfterText, RecordingHost, RecordingSink, turnInput } from "../acp/harness.js";
import { AGENT_BINS, skipReason } from "./agents.js";
import { describeThroughPheby } from "./through-pheby.js";

const reason = skipReason("hermes");
if (reason) console.info(reason);

describe.skipIf(reason !== null)("Hermes Agent over ACP", { timeout: 180_000 }, () => {
  let llm: FakeLlm;
  let backend: AgentBackend;
  let host: RecordingHost;
  let work: string;
  let options: AcpBackendOptions;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "pheby-hermes-"));
    const target = join(work, "made-by-hermes.txt");
    const chart = join(work, "chart.txt");
    writeFileSync(chart, "a chart");
    llm = await startFakeLlm(({ messages }) => {
      const last = messages[messages.length - 1];
      const user = textOf([...messages].reverse().find((m) => m.role === "user"));
      if (last?.role === "tool") return { text: "The command finished." };
      if (user.includes("approve the note")) {
        // Dangerous (rm -rf), so Hermes asks.
        const command = `rm -rf ${work}/old-notes && echo pheby > ${work}/note-approved.txt`;
        return { toolCalls: [{ name: "terminal", arguments: { command } }] };
      }
      if (user.includes("make the file")) {
        return {
          toolCalls: [
            {
              name: "terminal",
              arguments: { command: `rm -rf ${work}/old-build && echo pheby > ${target}` },
            },
          ],
        };
      }
      if (user.includes("send the chart")) return { text: `Here it is.\nMEDIA:${chart}\n` };
      if (user.includes("talk slowly")) return { text: "word ".repeat(400), chunkDelayMs: 50 };
      return { text: "Hello from the fake model." };
    });
    const home = mkdtempSync(join(tmpdir(), "pheby-hermes-home-"));
    writeFileSync(
      join(home, "config.yaml"),
      [
        "model:",
        "  provider: custom",
        "  default: fake-model",
        `  base_url: ${llm.baseUrl}`,
        "  api_key: sk-fake",
        "",
      ].join("\n"),
    );
    host = new RecordingHost();
    options = {
      command: [AGENT_BINS.hermes, "acp"],
      cwd: work,
      env: { HERMES_HOME: home, HOME: home },
      allowedFileRoots: [work],
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
    expect(llm.requests[0]?.tools).toContain("terminal");
    expect(result).toEqual({ status: "completed" });
    expect(sink.answer).toContain("Hello from the fake model.");
  });

  it("asks approval for a dangerous command with Hermes's choices; once runs it", async () => {
    const { sessionId } = await backend.createSession("c");
    const sink = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const result = await backend.prompt(
      turnInput(sessionId, "please make the file"),
      sink,
      new AbortController().signal,
    );
    expect(result).toEqual({ status: "completed" });
    const [asked] = sink.of("permission");
    expect(asked?.question.choices).toEqual(["once", "session", "always", "deny"]);
    expect(readFileSync(join(work, "made-by-hermes.txt"), "utf8").trim()).toBe("pheby");
    expect(sink.of("toolStart")[0]?.toolName).toBe("terminal");
    expect(sink.of("toolEnd").some((e) => e.status === "completed")).toBe(true);
    expect(sink.answer).toContain("The command finished.");
  });

  // hermes-agent 0.19.0 (PyPI) cannot reach clarify over ACP: its `hermes-acp` toolset leaves
  // `clarify` out and its acp_adapter has no elicitation bridge yet (upstream main adds
  // acp_adapter/elicitation.py). The form mapping is proven against the fake agent with
  // Hermes's exact clarify schema (test/acp/backend.test.ts).
  it.skip("asks a clarify question through elicitation (not reachable in hermes-agent 0.19.0)", () => {});

  it("delivers MEDIA: files from the allowed roots and strips the tag", async () => {
    const { sessionId } = await backend.createSession("c");
    const sink = new RecordingSink();
    await backend.prompt(turnInput(sessionId, "send the chart"), sink, new AbortController().signal);
    expect(sink.answer).not.toContain("MEDIA:");
    expect(sink.of("file").map((f) => f.file)).toEqual([{ source: "path", path: join(work, "chart.txt") }]);
  });

  it("reports models, lists sessions and cancels a slow run", async () => {
    // Hermes 0.19 lists one model per configured provider model.
    const catalogue = await backend.catalogue!();
    expect(catalogue.providers.flatMap((p) => p.models)).toEqual(["custom:fake-model"]);
    expect(backend.capabilities).toMatchObject({
      listSessions: true,
      loadHistory: true,
      deleteSession: false,
    });
    expect((await backend.listSessions!()).length).toBeGreaterThanOrEqual(3);
    const { sessionId } = await backend.createSession("c");
    const ctl = new AbortController();
    const sink = new RecordingSink();
    abortAfterText(sink, ctl, 20);
    expect(await backend.prompt(turnInput(sessionId, "talk slowly"), sink, ctl.signal)).toEqual({
      status: "cancelled",
    });
    expect(existsSync(work)).toBe(true);
  });

  describeThroughPheby({
    options: () => options,
    helloPrompt: "say hello",
    slowPrompt: "talk slowly",
    toolPrompt: "please approve the note",
    toolName: "terminal",
    toolFile: () => join(work, "note-approved.txt"),
    choices: ["once", "session", "always", "deny"],
  });
});
