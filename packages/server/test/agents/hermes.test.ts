/**
 * Hermes Agent (`hermes acp`) driven through the ACP backend, with a temporary
 * HERMES_HOME whose config.yaml points at the fake LLM as a custom provider.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_EXPIRY } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAcpBackend } from "../../src/agent/acp/index.js";
import { RecordingHost, RecordingSink, turnInput } from "../acp/harness.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "../acp/pheby.js";
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
  cancelledTurn,
  completedTurn,
  describeAgent,
  HELLO,
  tempHome,
  useAgent,
} from "./agents.js";
import { describeModes } from "./modes.js";
import { describePhebyTools } from "./pheby-tools.js";
import { describeThroughPheby } from "./through-pheby.js";

/** How much of the work dir's path Hermes's title keeps of {@link longListing}: past `/tmp/`, not all of it. */
const cutAt = (work: string) => Math.min(12, work.length - 2);

/** A command whose title Hermes cuts (at 77 characters, then `...`) inside the work dir's path. */
function longListing(work: string): string {
  const prefix = "echo ; ls ".length;
  return `echo ${"x".repeat(77 - prefix - cutAt(work))}; ls ${work}`;
}

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
      const path = join(work, ACTIVITY_FILE);
      if (user.includes(EDIT_PROMPT))
        return { toolCalls: [{ name: "write_file", arguments: { path, content: ACTIVITY_AFTER } }] };
      if (user.includes(CHANGE_PROMPT)) {
        const args = { mode: "replace", path, old_string: "TWO", new_string: "2" };
        return { toolCalls: [{ name: "patch", arguments: args }] };
      }
      if (user.includes(SHELL_PROMPT))
        return { toolCalls: [{ name: "terminal", arguments: { command: shellCommand() } }] };
      if (user.includes(PLAN_PROMPT)) {
        const todos = PLAN_STEPS.map((step, i) => ({ id: String(i + 1), ...step }));
        return { toolCalls: [{ name: "todo", arguments: { todos } }] };
      }
      if (user.includes("list the long way"))
        return { toolCalls: [{ name: "terminal", arguments: { command: longListing(work) } }] };
      if (user.includes("send the chart")) return { text: `Here it is.\nMEDIA:${join(work, "chart.txt")}\n` };
      const scoped = /^(session|always) approve (\w+)$/.exec(user.trim());
      if (scoped) {
        // `session`: a recursive delete; `always`: world-writable permissions (another of Hermes's
        // patterns, so the permanent grant does not silence the other tests' deletes).
        const [, scope, n] = scoped;
        const file = join(work, `${scope}-${n}.txt`);
        const command =
          scope === "session"
            ? `rm -rf ${work}/old-${n} && echo pheby > ${file}`
            : `touch ${file} && chmod 777 ${file} && echo pheby > ${file}`;
        return { toolCalls: [{ name: "terminal", arguments: { command } }] };
      }
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

  // hermes-agent 0.19.0 (PyPI) cannot reach its own clarify over ACP: its `hermes-acp` toolset
  // leaves `clarify` out and its acp_adapter has no elicitation bridge yet (upstream main adds
  // acp_adapter/elicitation.py). It asks through Pheby's `ask_user` instead (describePhebyTools
  // below). The elicitation form mapping is proven against the fake agent with Hermes's exact
  // clarify schema (test/acp/backend.test.ts).
  it.skip("asks a clarify question through elicitation (not reachable in hermes-agent 0.19.0)", () => {});

  it("its title cut off inside the work dir's path (77 characters, then ...) arrives scrubbed", async () => {
    const sink = new RecordingSink();
    await completedTurn(agent.backend, "list the long way", sink);
    const cut = agent.work.slice(0, cutAt(agent.work));
    const titles = sink.details.map((d) => d.detail.title);
    expect(
      titles.some((t) => t?.endsWith("; ls <workdir>...")),
      JSON.stringify(titles),
    ).toBe(true);
    const names = sink.of("toolStart").map((t) => t.toolName);
    expect(names.every((n) => !n.includes(cut))).toBe(true);
    expect(JSON.stringify(sink.details)).not.toContain(cut);
  });

  it("delivers MEDIA: files from the allowed roots and strips the tag", async () => {
    const { sessionId } = await agent.backend.createSession("c");
    const sink = new RecordingSink();
    await agent.backend.prompt(turnInput(sessionId, "send the chart"), sink, new AbortController().signal);
    expect(sink.answer).not.toContain("MEDIA:");
    expect(sink.of("file").map((f) => f.file)).toEqual([
      { source: "path", path: join(agent.work, "chart.txt") },
    ]);
  });

  it("reports models grouped by provider, lists sessions and cancels a slow run", async () => {
    // Hermes 0.19 lists its models as `provider:model`: one provider per prefix, the ID kept whole.
    const catalogue = await agent.backend.catalogue!();
    expect(catalogue.providers).toEqual([
      { slug: "custom", name: expect.any(String), models: ["custom:fake-model"] },
    ]);
    expect(catalogue.defaultModel).toEqual({ model: "custom:fake-model", provider: "custom" });
    expect(agent.backend.capabilities).toMatchObject({
      listSessions: true,
      loadHistory: true,
      deleteSession: true, // through `hermes sessions delete`
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

  describePhebyTools({ fixture: agent, cron: true });

  describe("approval scopes, expiry and deletion through a Pheby server", () => {
    let p: PhebyAcp;
    beforeAll(async () => {
      p = await startPhebyAcp(agent.options, { features: [FEATURE_EXPIRY] });
      await p.backend.ensureReady();
    }, 120_000);
    afterAll(() => p?.close());

    /** Send `text`; answer its approval (if one comes) with `choice`; the run's approvals and status. */
    async function turn(conv: string, text: string, choice?: "session" | "always" | "deny") {
      const { run_id } = await p.client.request({ type: "chat.send", conversation_id: conv, text });
      if (choice) {
        const asked = await p.waitFor("approval.request", (m) => m.run_id === run_id, 90_000);
        // Hermes denies an unanswered approval after 60 s by itself: the phone is told when.
        expect(Date.parse(asked.expires_at!) - Date.parse(asked.ts)).toBe(59_000);
        await p.client.request({ type: "approval.respond", approval_id: asked.approval_id, choice });
      }
      const finished = await p.waitFor("run.finished", (m) => m.run_id === run_id, 90_000);
      const asked = framesOf(p.frames, "approval.request").filter((m) => m.run_id === run_id);
      return { status: finished.status, asked: asked.length };
    }

    it("session: the same kind of command runs without asking in that conversation, and asks in another", async () => {
      const conv = await p.create();
      expect(await turn(conv, "session approve 1", "session")).toEqual({ status: "completed", asked: 1 });
      expect(readFileSync(join(agent.work, "session-1.txt"), "utf8").trim()).toBe("pheby");
      expect(await turn(conv, "session approve 2")).toEqual({ status: "completed", asked: 0 });
      expect(readFileSync(join(agent.work, "session-2.txt"), "utf8").trim()).toBe("pheby");
      const other = await p.create();
      expect(await turn(other, "session approve 3", "deny")).toEqual({ status: "completed", asked: 1 });
      expect(existsSync(join(agent.work, "session-3.txt"))).toBe(false);
    });

    it("always: the command's kind runs without asking from then on, in every conversation", async () => {
      const conv = await p.create();
      expect(await turn(conv, "always approve 1", "always")).toEqual({ status: "completed", asked: 1 });
      expect(readFileSync(join(agent.work, "always-1.txt"), "utf8").trim()).toBe("pheby");
      const other = await p.create();
      expect(await turn(other, "always approve 2")).toEqual({ status: "completed", asked: 0 });
      expect(readFileSync(join(agent.work, "always-2.txt"), "utf8").trim()).toBe("pheby");
    });

    it("deleting a conversation deletes its Hermes session (a new Hermes process no longer lists it)", async () => {
      const conv = await p.create();
      await p.chat(conv, "say hello", 90_000);
      const { conversations } = await p.client.request({ type: "conversation.list" });
      const session = conversations.find((c) => c.conversation_id === conv)!.session_id!;
      await p.client.request({ type: "conversation.delete", conversation_id: conv });
      const fresh = createAcpBackend(agent.options);
      await fresh.start(new RecordingHost());
      try {
        const listed = (await fresh.listSessions!()).map((s) => s.sessionId);
        expect(listed.length).toBeGreaterThan(0);
        expect(listed).not.toContain(session);
      } finally {
        await fresh.close();
      }
    });
  });

  // No plan-like mode: its modes only decide which edits it approves by itself.
  describeModes({
    fixture: agent,
    command: "help",
    modes: ["default", "accept_edits", "dont_ask"],
    autoApproves: ["accept_edits", "dont_ask"],
  });

  describeActivity({
    fixture: agent,
    // Its write_file and patch calls carry a note ("Approval prompt shows the diff"), no diff; its edit
    // approval (a call ID of its own, `edit-approval-N`) carries the whole file's. No completion is sent
    // for them.
    write: { events: false, preview: true },
    change: { preview: "whole" },
    shell: true,
    thoughts: true,
    plan: true,
    usage: { cost: false },
  });
});
