/**
 * Gemini CLI (`gemini --acp`) driven through the ACP backend, with `GOOGLE_GEMINI_BASE_URL` pointing
 * at the fake LLM's Gemini API dialect and an API-key login in a temporary `~/.gemini/settings.json`.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RecordingSink } from "../acp/harness.js";
import {
  ACTIVITY_AFTER,
  ACTIVITY_FILE,
  describeActivity,
  EDIT_PROMPT,
  SHELL_PROMPT,
  shellCommand,
} from "./activity.js";
import { AGENT_BINS, completedTurn, describeAgent, HELLO, tempHome, useAgent } from "./agents.js";
import { describeModes, requestText } from "./modes.js";
import { describeThroughPheby } from "./through-pheby.js";

describeAgent("gemini", "Gemini CLI over ACP", () => {
  const agent = useAgent(
    "gemini",
    (user, tools, work) => {
      if (user.includes(EDIT_PROMPT) && tools.includes("write_file")) {
        const args = { file_path: join(work, ACTIVITY_FILE), content: ACTIVITY_AFTER };
        return { toolCalls: [{ name: "write_file", arguments: args }] };
      }
      if (user.includes(SHELL_PROMPT) && tools.includes("run_shell_command")) {
        const args = { command: shellCommand(), description: "Show" };
        return { toolCalls: [{ name: "run_shell_command", arguments: args }] };
      }
      const file = /(?:approve the note|make the file|append again)/.exec(user)?.[0];
      if (!file || !tools.includes("run_shell_command")) return undefined;
      const target = file === "approve the note" ? "note-approved.txt" : "made-by-gemini.txt";
      const command = `echo pheby >> ${join(work, target)}`;
      return { toolCalls: [{ name: "run_shell_command", arguments: { command, description: "Write" } }] };
    },
    ({ llm, work }) => {
      const home = tempHome("gemini");
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
      return {
        command: [AGENT_BINS.gemini, "--acp"],
        cwd: work,
        env: {
          HOME: home,
          GEMINI_API_KEY: "fake-key",
          GOOGLE_GEMINI_BASE_URL: llm.baseUrl.replace(/\/v1$/, ""),
        },
        allowedFileRoots: [work],
      };
    },
  );

  it("streams an answer", async () => {
    const { sink } = await completedTurn(agent.backend, "say hello");
    expect(sink.answer).toContain(HELLO);
  });

  it("'Allow for this session' is the session choice: answered once, the next command is not asked", async () => {
    const session = new RecordingSink({
      permission: async () => ({ outcome: "selected", choice: "session" }),
    });
    const { sink, sessionId } = await completedTurn(agent.backend, "please make the file", session);
    expect(sink.of("permission")[0]?.question.choices).toEqual(["once", "session", "deny"]);
    // Gemini names the call `run_shell_command__…` and titles it with the command.
    expect(sink.of("toolStart").map((t) => t.toolName)).toEqual(["run_shell_command"]);
    const again = (await completedTurn(agent.backend, "append again", new RecordingSink(), sessionId)).sink;
    expect(again.of("permission")).toEqual([]); // the session grant holds
    expect(readFileSync(join(agent.work, "made-by-gemini.txt"), "utf8")).toBe("pheby\npheby\n");
  });

  describeThroughPheby({
    fixture: agent,
    toolName: "run_shell_command",
    choices: ["once", "session", "deny"],
  });

  describeModes({
    fixture: agent,
    command: "init",
    modes: ["default", "autoEdit", "yolo", "plan"],
    autoApproves: ["autoEdit", "yolo"],
    // In plan mode it offers the model exit_plan_mode and no shell, and its system prompt says so.
    plan: {
      modeId: "plan",
      inPlan: (r) =>
        r.tools.includes("exit_plan_mode") &&
        !r.tools.includes("run_shell_command") &&
        requestText(r).includes("Plan Mode"),
    },
  });

  // Its run_shell_command completes with no content (no output).
  describeActivity({
    fixture: agent,
    write: { events: true, preview: true },
    shell: false,
    thoughts: true,
    usage: false,
  });
});
