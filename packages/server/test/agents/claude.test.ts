/**
 * Claude Code through `@zed-industries/claude-code-acp`, with `ANTHROPIC_BASE_URL` pointing at the
 * fake LLM's Anthropic Messages dialect. `IS_SANDBOX=1` lets it run as root (CI runs as root).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RecordingSink } from "../acp/harness.js";
import {
  ACTIVITY_AFTER,
  ACTIVITY_FILE,
  describeActivity,
  EDIT_PROMPT,
  PLAN_PROMPT,
  PLAN_STEPS,
  SHELL_PROMPT,
  shellCommand,
} from "./activity.js";
import { AGENT_BINS, completedTurn, describeAgent, HELLO, tempHome, useAgent } from "./agents.js";
import { describeModes, requestText } from "./modes.js";
import { describeThroughPheby } from "./through-pheby.js";

describeAgent("claude", "Claude Code over ACP", () => {
  const agent = useAgent(
    "claude",
    (user, tools, work) => {
      if (user.includes(EDIT_PROMPT) && tools.includes("Write")) {
        const args = { file_path: join(work, ACTIVITY_FILE), content: ACTIVITY_AFTER };
        return { toolCalls: [{ name: "Write", arguments: args }] };
      }
      if (user.includes(SHELL_PROMPT) && tools.includes("Bash"))
        return { toolCalls: [{ name: "Bash", arguments: { command: shellCommand(), description: "Show" } }] };
      if (user.includes(PLAN_PROMPT) && tools.includes("TodoWrite")) {
        const todos = PLAN_STEPS.map((step) => ({ ...step, activeForm: step.content }));
        return { toolCalls: [{ name: "TodoWrite", arguments: { todos } }] };
      }
      const file = /(?:approve the note|make the file)/.exec(user)?.[0];
      if (!file || !tools.includes("Bash")) return undefined;
      const target = file === "approve the note" ? "note-approved.txt" : "made-by-claude.txt";
      const command = `echo pheby > ${join(work, target)}`;
      return { toolCalls: [{ name: "Bash", arguments: { command, description: "Write a file" } }] };
    },
    ({ llm, work }) => ({
      command: [AGENT_BINS.claude],
      cwd: work,
      env: {
        HOME: tempHome("claude"),
        ANTHROPIC_BASE_URL: llm.baseUrl.replace(/\/v1$/, ""),
        ANTHROPIC_API_KEY: "sk-ant-fake",
        IS_SANDBOX: "1",
        // Nothing but the fake model: no telemetry, error reports or update checks.
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      },
      allowedFileRoots: [work],
    }),
  );

  it("streams an answer", async () => {
    const { sink } = await completedTurn(agent.backend, "say hello");
    expect(sink.answer).toContain(HELLO);
  });

  it("asks for Bash; the tool is named from _meta and shows the command, not {} and 'Terminal'", async () => {
    const once = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const { sink } = await completedTurn(agent.backend, "please make the file", once);
    expect(sink.of("permission")[0]?.question.choices).toEqual(["once", "always", "deny"]);
    const starts = sink.of("toolStart");
    expect(new Set(starts.map((s) => s.toolName))).toEqual(new Set(["Bash"]));
    expect(starts.at(-1)?.args).toMatchObject({
      // The server shows its own directories as placeholders, never as paths (docs/security.md).
      command: "echo pheby > <workdir>/made-by-claude.txt",
    });
    expect(readFileSync(join(agent.work, "made-by-claude.txt"), "utf8").trim()).toBe("pheby");
  });

  describeThroughPheby({
    fixture: agent,
    toolName: "Bash",
    toolCommand: () => "echo pheby > <workdir>/note-approved.txt",
    choices: ["once", "always", "deny"],
  });

  describeModes({
    fixture: agent,
    command: "compact",
    modes: ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"],
    autoApproves: ["acceptEdits", "bypassPermissions"],
    plan: { modeId: "plan", inPlan: (r) => requestText(r).includes("Plan mode is active") },
  });

  describeActivity({
    fixture: agent,
    write: { events: true, preview: true },
    shell: true,
    thoughts: true,
    plan: true,
    usage: false,
  });
});
