/**
 * Pheby's tools (its MCP server) with a real agent, through a real Pheby server and `@pheby/client`,
 * shared by the suites of the agents that accept stdio MCP servers over ACP. The fake model calls
 * each tool the way the agent names it (agents.ts, `pheby <tool> <json>`): `ask_user` becomes a
 * `clarify.request` whose answer reaches the model; `schedule_create` makes a schedule that fires
 * as a run nobody asked for; `notify_user` a message of its own; `send_file` an attachment.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_EXPIRY, FEATURE_SCHEDULES, type ServerMessageOf } from "@pheby/protocol";
import { answerOf } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { framesOf, type PhebyAcp, startPhebyAcp } from "../acp/pheby.js";
import { type AgentFixture, HELLO, TOOL_RESULT } from "./agents.js";

/** What the calling suite's agent needs for these tests. */
export interface PhebyToolsSpec {
  fixture: AgentFixture;
  /**
   * Schedule on the next minute with cron (`* * * * *`) and report how late it fired after its
   * minute; else a one-shot `at` a few seconds ahead (quicker).
   */
  cron?: boolean;
}

/** Register the Pheby-tools tests inside the calling suite's describe. */
export function describePhebyTools(spec: PhebyToolsSpec): void {
  describe("Pheby's tools (its MCP server), through a Pheby server", () => {
    let p: PhebyAcp;
    let conv: string;

    beforeAll(async () => {
      const options = spec.fixture.options;
      p = await startPhebyAcp(options, {
        features: [FEATURE_SCHEDULES, FEATURE_EXPIRY],
        allowedFileRoots: options.allowedFileRoots,
      });
      await p.backend.ensureReady();
      conv = await p.create("Pheby tools");
      // A first turn: agents that connect MCP servers in the background (Qwen Code) are ready after it.
      await p.chat(conv, "say hello", 90_000);
    }, 150_000);

    afterAll(() => p?.close());

    /** Send `pheby <tool> <json>`; resolves with the run's final text once it finished. */
    async function callTool(tool: string, args: object, during?: (runId: string) => Promise<void>) {
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: conv,
        text: `pheby ${tool} ${JSON.stringify(args)}`,
      });
      await during?.(run_id);
      const finished = await p.waitFor("run.finished", (m) => m.run_id === run_id, 120_000);
      expect(finished.status).toBe("completed");
      const text = answerOf(p.frames, run_id)!.text;
      // Hermes hands the tool's JSON to the model as a quoted string inside its own wrapper.
      return text.replaceAll('\\"', '"');
    }

    /** The next run of the conversation nobody on the socket asked for, once it finished. */
    async function unsolicitedRun(after: number) {
      const accepted = await p.waitFor(
        "run.accepted",
        (m) => m.conversation_id === conv && m.request_id === undefined && !seen.has(m.run_id),
        120_000,
      );
      seen.add(accepted.run_id);
      const arrived = Date.now();
      const finished = await p.waitFor("run.finished", (m) => m.run_id === accepted.run_id, 120_000);
      const complete = answerOf(p.frames, accepted.run_id)!;
      return { accepted, finished, complete, lateMs: arrived - after };
    }
    const seen = new Set<string>();

    it("ask_user: the phone gets clarify.request, and the answer reaches the model", async () => {
      let asked: ServerMessageOf<"clarify.request"> | undefined;
      const text = await callTool(
        "ask_user",
        { question: "Deploy where?", choices: ["staging", "production"] },
        async (runId) => {
          asked = await p.waitFor("clarify.request", (m) => m.run_id === runId, 120_000);
          await p.client.request({
            type: "clarify.respond",
            clarify_id: asked.clarify_id,
            response: "production",
          });
        },
      );
      expect(asked).toMatchObject({ question: "Deploy where?", choices: ["staging", "production"] });
      expect(asked!.expires_at).toEqual(expect.any(String));
      expect(text).toContain(TOOL_RESULT);
      expect(text).toContain('{"answered":true,"answer":"production"}');
    });

    it("schedule_create, _list, _delete: the schedule fires and sends its prompt as a run nobody asked for", async () => {
      const when = spec.cron
        ? { cron: "* * * * *", timezone: "UTC" }
        : { at: new Date(Date.now() + 20_000).toISOString() };
      const text = await callTool("schedule_create", { prompt: "say hello", name: "Greeting", ...when });
      expect(text).toContain('"prompt":"say hello"');
      expect(text).toContain("not active");
      const { schedules } = await p.client.request({ type: "schedule.list", conversation_id: conv });
      const made = schedules.find((s) => s.name === "Greeting")!;
      // The agent's schedule waits for the user, who confirms it (enabling it is the confirmation).
      expect(made).toMatchObject({
        conversation_id: conv,
        enabled: false,
        confirmed: false,
        created_by: "agent",
      });
      const schedule = await p.client.confirmSchedule(made.schedule_id);
      expect(schedule).toMatchObject({ enabled: true, confirmed: true });
      const due = Date.parse(schedule.next_run_at!);
      const run = await unsolicitedRun(due);
      expect(run.finished.status).toBe("completed");
      expect(run.complete.text).toContain(HELLO);
      console.info(
        `scheduled run fired ${run.lateMs} ms after its time (${spec.cron ? "cron minute" : "at"})`,
      );
      // The agent lists and deletes it too.
      const listed = await callTool("schedule_list", {});
      expect(listed).toContain(`"schedule_id":"${schedule.schedule_id}"`);
      expect(listed).toContain('"last_status":"completed"');
      const deleted = await callTool("schedule_delete", { schedule_id: schedule.schedule_id });
      expect(deleted).toContain('"deleted":{');
      const gone = await p.waitFor(
        "schedule.changed",
        (m) => m.deleted && m.schedule.schedule_id === schedule.schedule_id,
      );
      expect(gone.schedule.conversation_id).toBe(conv);
      expect((await p.client.request({ type: "schedule.list", conversation_id: conv })).schedules).toEqual(
        [],
      );
    });

    it("notify_user: a message of its own in the conversation, recorded in history", async () => {
      const before = Date.now();
      const text = await callTool("notify_user", { title: "Build", body: "The build passed." });
      expect(text).toContain('"sent":true');
      const run = await unsolicitedRun(before);
      expect(run.complete.text).toBe("Build\n\nThe build passed.");
      const history = await p.client.request({ type: "conversation.open", conversation_id: conv });
      expect(history.messages.at(-1)).toMatchObject({
        role: "assistant",
        text: "Build\n\nThe build passed.",
      });
    });

    it("send_file: a file from the allowed roots reaches the phone as an attachment", async () => {
      const path = join(spec.fixture.work, "pheby-tool-report.txt");
      writeFileSync(path, "report from the agent");
      const text = await callTool("send_file", { path, caption: "The report" });
      expect(text).toContain('"delivered":true');
      const added = framesOf(p.frames, "attachment.added").find(
        (a) => a.attachment.filename === "pheby-tool-report.txt",
      );
      expect(added?.attachment).toMatchObject({ direction: "outbound", size: 21, conversation_id: conv });
    });
  });
}
