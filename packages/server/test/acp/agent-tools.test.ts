/**
 * Pheby's MCP server end to end with the scripted ACP agent, over both routes (the agent declares
 * `mcpCapabilities.http` and gets Pheby's HTTP listener, or not and gets the stdio relay): the agent
 * is handed the server in `session/new|load|resume`, connects its MCP client (the MCP SDK's), calls
 * its tools over MCP, and the tools act in the
 * conversation through a real Pheby server driven by `@pheby/client` (ask_user becomes a
 * `clarify.request` the client answers; schedule_create's schedule fires as an unsolicited run;
 * notify_user, pushed as a `message` where push is on, and send_file). Also: Pheby grants its own tools' permission itself, and Hermes's
 * `_hermes/notification` wakes the agent. Real agents do the same in test/agents.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_EXPIRY, FEATURE_SCHEDULES } from "@pheby/protocol";
import { answerOf } from "@pheby/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver } from "../../../conformance/src/push-receiver.js";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { FAST_RETRY } from "../push/rig.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "./pheby.js";

type FakeAgent = ReturnType<typeof fakeAgentDir>;

/** How the agent reaches Pheby's tools: it declares `mcpCapabilities.http` (Pheby's listener) or not (the relay). */
type Route = "stdio" | "http";
const HTTP_CAPS = { FAKE_CAPS: JSON.stringify({ mcpCapabilities: { http: true } }) };

function agentOptions(fake: FakeAgent, route: Route): AcpBackendOptions {
  return {
    command: FAKE_AGENT_COMMAND,
    cwd: fake.dir,
    env: route === "http" ? { ...fake.env, ...HTTP_CAPS } : fake.env,
    allowedFileRoots: [fake.dir],
    requestTimeoutMs: 10_000,
  };
}

describe.each(["stdio", "http"] as const)(
  "Pheby's tools for agents, through the ACP backend, over %s",
  (route) => {
    const started: PhebyAcp[] = [];
    afterEach(async () => {
      for (const p of started.splice(0)) await p.close();
    });
    async function pheby(fake: FakeAgent, server: Parameters<typeof startPhebyAcp>[1] = {}) {
      const p = await startPhebyAcp(agentOptions(fake, route), {
        features: [FEATURE_SCHEDULES, FEATURE_EXPIRY],
        allowedFileRoots: [fake.dir],
        ...server,
      });
      started.push(p);
      return p;
    }

    it("hands the agent its MCP server in session/new (the route its capabilities choose), one token for the whole agent process", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake);
      const one = await p.create();
      const two = await p.create();
      const news = fake.calls("session/new");
      expect(news).toHaveLength(2);
      const [server] = news[0]!.params.mcpServers;
      if (route === "stdio") {
        expect(server).toMatchObject({ name: "pheby", args: expect.any(Array) });
        const env = Object.fromEntries(
          server.env.map((e: { name: string; value: string }) => [e.name, e.value]),
        );
        expect(Object.keys(env).sort()).toEqual(["PHEBY_MCP_SOCKET", "PHEBY_MCP_TOKEN"]);
      } else {
        expect(server).toEqual({
          type: "http",
          name: "pheby",
          url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/),
          headers: [{ name: "Authorization", value: expect.stringMatching(/^Bearer [0-9a-f]{64}$/) }],
        });
      }
      expect(news[1]!.params.mcpServers).toEqual(news[0]!.params.mcpServers);
      expect(JSON.stringify(news)).not.toContain("test-secret-for-pheby"); // never the shared secret
      const listed = await p.chat(one, "mcp list", 30_000);
      expect(listed.complete.text).toBe(
        "ask_user,schedule_create,schedule_list,schedule_delete,notify_user,send_file",
      );
      expect((await p.chat(two, "mcp schedule_list", 30_000)).complete.text).toBe("schedule_list -> []");
    });

    it("ask_user: the phone gets a clarify.request (with its expiry) and its answer reaches the agent", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake);
      const id = await p.create();
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: id,
        text: 'mcp ask_user {"question":"Deploy where?","choices":["staging","production"]}',
      });
      const asked = await p.waitFor("clarify.request", (m) => m.run_id === run_id, 30_000);
      expect(asked).toMatchObject({
        conversation_id: id,
        question: "Deploy where?",
        choices: ["staging", "production"],
        allow_free_text: true,
      });
      // The scripted agent announces no timeout: Pheby's own 240 s apply.
      expect(Date.parse(asked.expires_at!) - Date.parse(asked.ts)).toBe(240_000);
      await p.client.request({
        type: "clarify.respond",
        clarify_id: asked.clarify_id,
        response: "production",
      });
      const finished = await p.waitFor("run.finished", (m) => m.run_id === run_id, 30_000);
      expect(finished.status).toBe("completed");
      const complete = answerOf(p.frames, run_id);
      expect(complete?.text).toBe('ask_user -> {"answered":true,"answer":"production"}');
    });

    it("ask_user with a short wait: the question expires, the phone is told, the agent hears no answer", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake, { agentTools: { askTimeoutMs: 1_000 } });
      const id = await p.create();
      const run = await p.chat(id, 'mcp ask_user {"question":"Anyone?"}', 30_000);
      expect(run.complete.text).toBe('ask_user -> {"answered":false,"reason":"No answer within 1 seconds."}');
      const asked = framesOf(p.frames, "clarify.request").at(-1)!;
      expect(
        framesOf(p.frames, "clarify.resolved").find((m) => m.clarify_id === asked.clarify_id),
      ).toMatchObject({
        accepted: false,
      });
      expect(
        framesOf(p.frames, "message.complete").some((m) => m.kind === "notice" && /expired/.test(m.text)),
      ).toBe(true);
    });

    it("schedule_create: the agent's schedule waits, disabled, pushed and shown to the phone, until the user confirms it", async () => {
      const fake = fakeAgentDir();
      const receiver = await startReceiver();
      const p = await pheby(fake, { push: { allowPrivate: true, retry: FAST_RETRY } });
      // A subscription that chose only messages still hears of the agent's schedule.
      const phone = receiver.endpoint("phone");
      await p.client.subscribePush(phone, { events: ["message"] });
      const id = await p.create();
      const at = new Date(Date.now() + 60 * 60_000).toISOString();
      const run = await p.chat(
        id,
        `mcp schedule_create {"prompt":"echo scheduled hello","at":"${at}"}`,
        30_000,
      );
      const answer = JSON.parse(run.complete.text.replace(/^schedule_create -> /, ""));
      expect(answer).toMatchObject({
        active: false,
        note: expect.stringMatching(/not active: it runs only after the user confirms/),
      });
      const created = answer.schedule;
      expect(created).toMatchObject({
        conversation_id: id,
        prompt: "echo scheduled hello",
        enabled: false,
        next_run_at: null,
        created_by: "agent",
        confirmed: false,
        auto_approve: false,
      });
      const changed = await p.waitFor(
        "schedule.changed",
        (m) => m.schedule.schedule_id === created.schedule_id,
      );
      expect(changed).toMatchObject({ deleted: false, schedule: { enabled: false, confirmed: false } });
      const pushed = (await phone.next()).payload;
      expect(pushed).toMatchObject({
        v: 1,
        kind: "schedule",
        conversation_id: id,
        schedule_id: created.schedule_id,
        prompt_preview: "echo scheduled hello",
      });
      // The user confirms it (the client's confirmSchedule: enabling it is the confirmation), then
      // moves it close by, so the test need not wait an hour. It fires as a run nobody asked for.
      const confirmed = await p.client.confirmSchedule(created.schedule_id);
      expect(confirmed).toMatchObject({ enabled: true, confirmed: true, created_by: "agent" });
      await p.client.request({
        type: "schedule.update",
        schedule_id: created.schedule_id,
        at: new Date(Date.now() + 1_500).toISOString(),
      });
      const accepted = await p.waitFor(
        "run.accepted",
        (m) => m.run_id !== run.runId && m.conversation_id === id,
        30_000,
      );
      expect(accepted.request_id).toBeUndefined();
      const finished = await p.waitFor("run.finished", (m) => m.run_id === accepted.run_id, 30_000);
      expect(finished.status).toBe("completed");
      const complete = answerOf(p.frames, accepted.run_id);
      expect(complete?.text).toBe("echo: echo scheduled hello");
      // The agent may delete what it made, never the user's.
      const users = await p.client.request({
        type: "schedule.create",
        conversation_id: id,
        prompt: "the user's",
        cron: "0 8 * * *",
      });
      const refused = await p.chat(
        id,
        `mcp schedule_delete {"schedule_id":"${users.schedule.schedule_id}"}`,
        30_000,
      );
      expect(refused.complete.text).toBe(
        "schedule_delete -> error: This schedule was made by the user: only the user can delete it, in Pheby.",
      );
      const deleted = await p.chat(
        id,
        `mcp schedule_delete {"schedule_id":"${created.schedule_id}"}`,
        30_000,
      );
      expect(deleted.complete.text).toContain('"deleted":{');
      expect((await p.client.request({ type: "schedule.list" })).schedules).toEqual([users.schedule]);
      expect(receiver.errors).toEqual([]);
      await receiver.close();
    });

    it("notify_user: a message of its own in the conversation, after the answer, recorded in history, pushed as a message", async () => {
      const fake = fakeAgentDir();
      const receiver = await startReceiver();
      const p = await pheby(fake, { push: { allowPrivate: true, retry: FAST_RETRY } });
      const phone = receiver.endpoint("phone");
      await p.client.subscribePush(phone, { events: ["message", "run_finished"] });
      const id = await p.create();
      const run = await p.chat(id, 'mcp notify_user {"title":"Build","body":"The build passed."}', 30_000);
      expect(run.complete.text).toBe('notify_user -> {"sent":true}');
      const accepted = await p.waitFor("run.accepted", (m) => m.run_id !== run.runId, 30_000);
      expect(accepted.request_id).toBeUndefined();
      const finished = await p.waitFor("run.finished", (m) => m.run_id === accepted.run_id, 30_000);
      expect(finished.status).toBe("completed");
      const history = await p.client.request({ type: "conversation.open", conversation_id: id });
      expect(history.messages.at(-1)).toMatchObject({
        role: "assistant",
        text: "Build\n\nThe build passed.",
      });
      // The phone is told of both: the run it asked for finished, and the agent's message.
      const pushed = [(await phone.next()).payload, (await phone.next()).payload];
      expect(pushed.map((m) => [m.kind, m.run_id])).toEqual([
        ["run_finished", run.runId],
        ["message", accepted.run_id],
      ]);
      // The push shows the conversation as its title and the message's first line (notify_user's title).
      expect(pushed[1]).toMatchObject({ title: "New chat", body: "Build" });
      expect(receiver.errors).toEqual([]);
      await receiver.close();
    });

    it("send_file: a file from the allowed roots joins the answer; one from elsewhere is refused, in words", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake);
      const id = await p.create();
      const report = join(fake.dir, "report.txt");
      writeFileSync(report, "the report");
      const run = await p.chat(id, `mcp send_file {"path":"${report}","caption":"Here you go"}`, 30_000);
      expect(run.complete.text).toContain('send_file -> {"delivered":true,"filename":"report.txt"}');
      const added = framesOf(p.frames, "attachment.added").find(
        (a) => a.attachment.filename === "report.txt",
      );
      expect(added?.attachment).toMatchObject({ direction: "outbound", size: 10 });
      const outside = join(mkdtempSync(join(tmpdir(), "pheby-outside-")), "secret.txt");
      writeFileSync(outside, "no");
      const refused = await p.chat(id, `mcp send_file {"path":"${outside}"}`, 30_000);
      expect(refused.complete.text).toMatch(/^send_file -> error: Pheby did not send the file/);
    });

    it("grants the agent's permission request for its own tools without asking the phone", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake);
      const id = await p.create();
      const run = await p.chat(id, "phebypermission", 30_000);
      expect(run.complete.text).toBe("chose proceed_once");
      expect(framesOf(p.frames, "approval.request")).toEqual([]);
    });

    it("offers nothing when the operator turned the tools off", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake, { agentTools: { enabled: false } });
      const id = await p.create();
      expect(fake.calls("session/new").at(-1)?.params.mcpServers).toEqual([]);
      expect((await p.chat(id, "mcp list", 30_000)).complete.text).toBe("no MCP server");
    });

    it("a _hermes/notification wakes the agent with its text, as a run nobody asked for, receipts in _meta", async () => {
      const fake = fakeAgentDir();
      const p = await pheby(fake);
      const id = await p.create();
      const first = await p.chat(id, "background", 30_000);
      const accepted = await p.waitFor("run.accepted", (m) => m.run_id !== first.runId, 30_000);
      expect(accepted.request_id).toBeUndefined();
      await p.waitFor("run.finished", (m) => m.run_id === accepted.run_id, 30_000);
      const complete = answerOf(p.frames, accepted.run_id);
      expect(complete?.text).toBe('woken with {"hermes.notificationIds":["deleg-1"]}');
      expect(fake.calls("initialize")[0]!.params.clientCapabilities._meta).toEqual({
        "hermes.backgroundNotifications": 1,
      });
      // The wake-up text is the agent's own, not something the user said: only the first prompt is in history.
      const history = await p.client.request({ type: "conversation.open", conversation_id: id });
      expect(history.messages.filter((m) => m.role === "user").map((m) => m.text)).toEqual(["background"]);
    });
  },
);
