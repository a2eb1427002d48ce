/**
 * OpenCode (`opencode acp`) driven through the ACP backend, with an `@ai-sdk/openai-compatible` provider in
 * the project's `opencode.json` pointing at the fake LLM: one plain model and one reasoning model, so the
 * effort option comes and goes with the model and settings must be applied against the model the turn will
 * use.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { TurnSettings } from "../../src/agent/port.js";
import { RecordingSink, turnInput } from "../acp/harness.js";
import { startPhebyAcp } from "../acp/pheby.js";
import { tempDir } from "../helpers.js";
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
import {
  AGENT_BINS,
  AGENTS_DIR,
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

const never = () => new AbortController().signal;

describeAgent("opencode", "OpenCode over ACP", () => {
  const agent = useAgent(
    "opencode",
    (user, tools, work) => {
      if (!tools.includes("bash")) return { text: "A title" }; // title generation
      const shell = (file: string) => ({
        toolCalls: [
          { name: "bash", arguments: { command: `echo pheby > ${join(work, file)}`, description: "Write" } },
        ],
      });
      if (user.includes("approve the note")) return shell("note-approved.txt");
      if (user.includes("make the file")) return shell("made-by-opencode.txt");
      const filePath = join(work, ACTIVITY_FILE);
      if (user.includes(EDIT_PROMPT))
        return { toolCalls: [{ name: "write", arguments: { filePath, content: ACTIVITY_AFTER } }] };
      if (user.includes(CHANGE_PROMPT)) {
        const args = { filePath, oldString: "TWO", newString: "2" };
        return { toolCalls: [{ name: "edit", arguments: args }] };
      }
      if (user.includes(SHELL_PROMPT))
        return { toolCalls: [{ name: "bash", arguments: { command: shellCommand(), description: "Show" } }] };
      if (user.includes(PLAN_PROMPT)) {
        const todos = PLAN_STEPS.map((step, i) => ({ id: String(i + 1), priority: "medium", ...step }));
        return { toolCalls: [{ name: "todowrite", arguments: { todos } }] };
      }
      return undefined;
    },
    ({ llm, work }) => {
      writeFileSync(
        join(work, "opencode.json"),
        JSON.stringify({
          autoupdate: false,
          share: "disabled",
          model: "fake/fake-model",
          provider: {
            fake: {
              npm: "@ai-sdk/openai-compatible",
              name: "Fake",
              options: { baseURL: llm.baseUrl, apiKey: "sk-fake" },
              models: {
                // A context limit, so it reports usage (it sends none for a model without one).
                "fake-model": { name: "Fake", limit: { context: 100_000, output: 8_000 } },
                "fake-reasoner": { name: "Reasoner", reasoning: true },
              },
            },
          },
          permission: { bash: "ask", edit: "ask" },
        }),
      );
      return {
        command: [AGENT_BINS.opencode, "acp"],
        cwd: work,
        env: {
          HOME: tempHome("opencode"),
          // OpenCode npm-installs @opencode-ai/plugin into its config dir on first start: keep that
          // dir with the installed agent so it happens once, not at every run.
          XDG_CONFIG_HOME: join(AGENTS_DIR, "opencode", "config"),
          // Offline: no models.dev catalogue, no self-update.
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          OPENCODE_DISABLE_AUTOUPDATE: "1",
        },
        allowedFileRoots: [work],
      };
    },
  );

  it("streams an answer", async () => {
    const { sink } = await completedTurn(agent.backend, "say hello");
    expect(sink.answer).toContain(HELLO);
  });

  it("asks permission for bash; once runs it; the tool event carries the late command", async () => {
    const once = new RecordingSink({ permission: async () => ({ outcome: "selected", choice: "once" }) });
    const { sink } = await completedTurn(agent.backend, "please make the file", once);
    expect(sink.of("permission")[0]?.question.choices).toEqual(["once", "always", "deny"]);
    expect(readFileSync(join(agent.work, "made-by-opencode.txt"), "utf8").trim()).toBe("pheby");
    const starts = sink.of("toolStart");
    expect(starts.every((s) => s.toolName === "bash")).toBe(true);
    // OpenCode's first tool_call has only {cwd}; the command arrives in an update.
    expect(starts.at(-1)?.args).toMatchObject({
      // The server shows its own directories as placeholders, never as paths (docs/security.md).
      command: "echo pheby > <workdir>/made-by-opencode.txt",
    });
  });

  it("sends the effort to a reasoning model, and drops it with a notice for a model without one", async () => {
    const { sessionId } = await agent.backend.createSession("c");
    const settings = (model: string): TurnSettings => ({
      model: { model, provider: null },
      effort: "high",
      yolo: false,
    });
    const before = agent.llm.requests.length;
    const thinking = new RecordingSink();
    const r1 = await agent.backend.prompt(
      turnInput(sessionId, "say hello", { settings: settings("fake/fake-reasoner") }),
      thinking,
      never(),
    );
    expect(r1).toEqual({ status: "completed" });
    expect(thinking.of("notice")).toEqual([]);
    const asked = agent.llm.requests.slice(before).filter((r) => r.tools.includes("bash"));
    expect(asked.map((r) => [r.model, r.reasoningEffort])).toEqual([["fake-reasoner", "high"]]);

    const plain = new RecordingSink();
    const r2 = await agent.backend.prompt(
      turnInput(sessionId, "say hello", { settings: settings("fake/fake-model") }),
      plain,
      never(),
    );
    expect(r2).toEqual({ status: "completed" }); // before: "effort not found: high"
    expect(plain.of("notice").map((n) => n.text)).toEqual([
      "Setting skipped: reasoning effort high is not offered with the model fake/fake-model; this turn uses the agent's current setting.",
    ]);
    const catalogue = await agent.backend.catalogue!();
    expect(catalogue.modelEfforts).toMatchObject({
      "fake/fake-model": [],
      "fake/fake-reasoner": ["low", "medium", "high"],
    });
  });

  it("cancels a slow run and carries on", async () => {
    const { sessionId } = await cancelledTurn(agent.backend);
    await completedTurn(agent.backend, "say hello", new RecordingSink(), sessionId);
  });

  it("through Pheby: the catalogue's probe session never becomes an empty conversation, across restarts", async () => {
    const dataDir = tempDir();
    const conversations = async (p: Awaited<ReturnType<typeof startPhebyAcp>>) =>
      (await p.client.request({ type: "conversation.list" })).conversations;
    const first = await startPhebyAcp(agent.options, { dataDir });
    await first.backend.ensureReady();
    await first.client.request({ type: "models.list" });
    const known = (await conversations(first)).length; // sessions of the earlier tests, imported
    first.client.close();
    await first.ts.close();
    const second = await startPhebyAcp(agent.options, { dataDir });
    try {
      await second.backend.ensureReady();
      await second.client.request({ type: "models.list" });
      expect(await conversations(second)).toHaveLength(known); // before: one more "New chat" per restart
    } finally {
      await second.close();
    }
  });

  describeThroughPheby({
    fixture: agent,
    toolName: "bash",
    toolCommand: () => "echo pheby > <workdir>/note-approved.txt",
    choices: ["once", "always", "deny"],
  });

  describePhebyTools({ fixture: agent });

  describeModes({
    fixture: agent,
    command: "init",
    modes: ["build", "plan"],
    autoApproves: [],
    // Its plan agent appends a plan-mode system reminder to the user's message.
    plan: { modeId: "plan", inPlan: (r) => requestText(r).includes("Plan mode ACTIVE") },
  });

  describeActivity({
    fixture: agent,
    // `write` sends no diff: its approval's preview has the file's; the call, "Wrote file successfully.".
    write: { events: false, preview: true },
    // `edit`: the whole file in the approval's preview; its oldString/newString on completion.
    change: { preview: "whole", events: "fragment" },
    shell: true,
    thoughts: true,
    plan: false, // its todowrite is a tool call of its own, not an ACP plan
    usage: { cost: true },
  });
});
