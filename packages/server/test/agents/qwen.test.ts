/**
 * Qwen Code (`qwen --acp`) driven through the ACP backend, talking to the fake LLM.
 */
import { existsSync, readFileSync } from "node:fs";
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
import {
  AGENT_BINS,
  cancelledTurn,
  completedTurn,
  describeAgent,
  HELLO,
  tempHome,
  useAgent,
} from "./agents.js";
import { describeModes, requestText } from "./modes.js";
import { describePhebyTools } from "./pheby-tools.js";
import { describeThroughPheby } from "./through-pheby.js";

describeAgent("qwen", "Qwen Code over ACP", () => {
  const agent = useAgent(
    "qwen",
    (user, _tools, work) => {
      if (user.includes(EDIT_PROMPT)) {
        const args = { file_path: join(work, ACTIVITY_FILE), content: ACTIVITY_AFTER };
        return { toolCalls: [{ name: "write_file", arguments: args }] };
      }
      if (user.includes(SHELL_PROMPT)) {
        const args = { command: shellCommand(), description: "Show", is_background: false };
        return { toolCalls: [{ name: "run_shell_command", arguments: args }] };
      }
      const file = /approve the note|make the file/.exec(user)?.[0];
      if (!file) return undefined;
      const target = file === "approve the note" ? "note-approved.txt" : "made-by-qwen.txt";
      const description = file === "approve the note" ? "Write a note" : "Write a file";
      const args = { command: `echo pheby > ${join(work, target)}`, description, is_background: false };
      return { toolCalls: [{ name: "run_shell_command", arguments: args }] };
    },
    ({ llm, work }) => ({
      command: [AGENT_BINS.qwen, "--acp"],
      cwd: work,
      env: {
        HOME: tempHome("qwen"),
        OPENAI_API_KEY: "sk-fake",
        OPENAI_BASE_URL: llm.baseUrl,
        OPENAI_MODEL: "fake-model",
      },
      allowedFileRoots: [work],
      mode: "default", // Qwen's default mode is `auto`, which does not ask permission.
    }),
  );

  it("creates a session and streams an answer", async () => {
    const { sink } = await completedTurn(agent.backend, "say hello");
    expect(sink.answer).toContain(HELLO);
    expect(agent.llm.requests.some((r) => r.tools.includes("run_shell_command"))).toBe(true);
  });

  it("asks permission for a shell tool call; answering once runs it", async () => {
    const once = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const { sink } = await completedTurn(agent.backend, "please make the file", once);
    const [asked] = sink.of("permission");
    expect(asked?.question.choices).toEqual(["once", "always", "deny"]);
    const target = join(agent.work, "made-by-qwen.txt");
    expect(existsSync(target)).toBe(true);
    expect(readFileSync(target, "utf8").trim()).toBe("pheby");
    const ends = sink.of("toolEnd");
    expect(ends.some((e) => e.status === "completed")).toBe(true);
    expect(sink.of("toolStart").length).toBeGreaterThan(0);
    expect(sink.answer).toContain("The command finished.");
  });

  it("reports its models and declared capabilities", async () => {
    await agent.backend.ensureReady?.();
    const catalogue = await agent.backend.catalogue!();
    console.info(
      "qwen catalogue",
      JSON.stringify(catalogue),
      "capabilities",
      JSON.stringify(agent.backend.capabilities),
    );
    expect(catalogue.providers.flatMap((p) => p.models).some((m) => m.includes("fake-model"))).toBe(true);
  });

  it("cancels a slow run", async () => {
    const { sink, sessionId } = await cancelledTurn(agent.backend);
    expect(sink.answer.length).toBeLessThan("word ".repeat(400).length);
    await completedTurn(agent.backend, "say hello", new RecordingSink(), sessionId); // still healthy
  });

  describeThroughPheby({
    fixture: agent,
    toolName: "Shell", // Qwen titles the ACP tool call by its display name
    choices: ["once", "always", "deny"],
  });

  describePhebyTools({ fixture: agent });

  describeModes({
    fixture: agent,
    command: "init",
    modes: ["plan", "default", "auto-edit", "auto", "yolo"],
    autoApproves: ["auto", "auto-edit", "yolo"],
    plan: { modeId: "plan", inPlan: (r) => requestText(r).includes("Plan mode is active") },
  });

  // No plan: its todo_write is not among the tools of an ACP session, and its tool_call refuses it
  // ("Deferred tool \"todo_write\" is not registered in this session"). Usage only for a model whose
  // context window it knows (none for `fake-model`), so this suite names one of Qwen's own.
  describeActivity({
    fixture: agent,
    options: () => ({ ...agent.options, env: { ...agent.options.env, OPENAI_MODEL: "qwen3-coder-plus" } }),
    write: { events: true, preview: true },
    shell: true,
    thoughts: true,
    usage: { cost: false },
  });
});
