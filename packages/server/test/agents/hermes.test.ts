/**
 * Hermes Agent (`hermes acp`) driven through the ACP backend, with a temporary
 * HERMES_HOME whose config.yaml points at the fake LLM as a custom provider.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RecordingSink, turnInput } from "../acp/harness.js";
import {
  AGENT_BINS,
  cancelledTurn,
  completedTurn,
  describeAgent,
  HELLO,
  tempHome,
  useAgent,
} from "./agents.js";
import { describeThroughPheby } from "./through-pheby.js";

describeAgent("hermes", "Hermes Agent over ACP", () => {
  const agent = useAgent(
    "hermes",
    (user, _tools, work) => {
      if (user.includes("approve the note")) {
        // Dangerous (rm -rf), so Hermes asks.
        const command = `rm -rf ${work}/old-notes && echo pheby > ${work}/note-approved.txt`;
        return { toolCalls: [{ name: "terminal", arguments: { command } }] };
      }
      if (user.includes("make the file")) {
        const command = `rm -rf ${work}/old-build && echo pheby > ${join(work, "made-by-hermes.txt")}`;
        return { toolCalls: [{ name: "terminal", arguments: { command } }] };
      }
      if (user.includes("send the chart")) return { text: `Here it is.\nMEDIA:${join(work, "chart.txt")}\n` };
      return undefined;
    },
    ({ llm, work }) => {
      writeFileSync(join(work, "chart.txt"), "a chart");
      const home = tempHome("hermes");
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
      return {
        command: [AGENT_BINS.hermes, "acp"],
        cwd: work,
        env: { HERMES_HOME: home, HOME: home },
        allowedFileRoots: [work],
      };
    },
  );

  it("creates a session and streams an answer", async () => {
    const { sink } = await completedTurn(agent.backend, "say hello");
    expect(agent.llm.requests[0]?.tools).toContain("terminal");
    expect(sink.answer).toContain(HELLO);
  });

  it("asks approval for a dangerous command with Hermes's choices; once runs it", async () => {
    const once = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const { sink } = await completedTurn(agent.backend, "please make the file", once);
    const [asked] = sink.of("permission");
    expect(asked?.question.choices).toEqual(["once", "session", "always", "deny"]);
    expect(readFileSync(join(agent.work, "made-by-hermes.txt"), "utf8").trim()).toBe("pheby");
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
    const { sessionId } = await agent.backend.createSession("c");
    const sink = new RecordingSink();
    await agent.backend.prompt(turnInput(sessionId, "send the chart"), sink, new AbortController().signal);
    expect(sink.answer).not.toContain("MEDIA:");
    expect(sink.of("file").map((f) => f.file)).toEqual([
      { source: "path", path: join(agent.work, "chart.txt") },
    ]);
  });

  it("reports models, lists sessions and cancels a slow run", async () => {
    // Hermes 0.19 lists one model per configured provider model.
    const catalogue = await agent.backend.catalogue!();
    expect(catalogue.providers.flatMap((p) => p.models)).toEqual(["custom:fake-model"]);
    expect(agent.backend.capabilities).toMatchObject({
      listSessions: true,
      loadHistory: true,
      deleteSession: false,
    });
    expect((await agent.backend.listSessions!()).length).toBeGreaterThanOrEqual(3);
    await cancelledTurn(agent.backend);
    expect(existsSync(agent.work)).toBe(true);
  });

  describeThroughPheby({
    fixture: agent,
    toolName: "terminal",
    choices: ["once", "session", "always", "deny"],
  });
});
