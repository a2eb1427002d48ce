/**
 * The `schedules` extension through a real server: requests and their errors, who gets which
 * event (the requester its reply, the other `schedules` connections `schedule.changed`, v1
 * connections nothing), a due schedule sending its prompt as a run nobody asked for, its turn
 * behind an active run, restarts, and deletion with the conversation. Every frame each client
 * receives must fit the features it enabled (test/helpers.ts). Behind an active run a scheduled
 * prompt joins the `queue` extension's queue.
 */
import { FEATURE_QUEUE, FEATURE_SCHEDULES, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import type { TurnSink } from "../src/agent/port.js";
import {
  createConversation,
  RawClient,
  scriptedBackend,
  startServer,
  type TestServer,
  tempDir,
} from "./helpers.js";
import { ManualClock } from "./manual-clock.js";

const T0 = Date.parse("2026-03-27T12:00:00Z");
const SCHEDULES = [FEATURE_SCHEDULES];

describe("the schedules extension", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });

  async function serve(options: Parameters<typeof startServer>[0] = {}) {
    const server = await startServer({ transport: "memory", ...options });
    servers.push(server);
    return server;
  }
  async function connect(server: TestServer, features?: string[]) {
    const client = await RawClient.connect(server.wsUrl, features ? { features } : {});
    clients.push(client);
    return client;
  }

  it("is negotiated: v1 connections get unknown_type and none of its events", async () => {
    const server = await serve();
    const v1 = await connect(server);
    const other = await connect(server, ["x-unknown", FEATURE_SCHEDULES]);
    expect(other.features).toEqual([FEATURE_SCHEDULES]);
    expect(await v1.request({ type: "schedule.list" }, "schedule.snapshot")).toMatchObject({
      type: "error",
      error: { code: "unknown_type", message: "unknown message type" },
    });
    const conv = await createConversation(other);
    await other.ok(
      { type: "schedule.create", conversation_id: conv, prompt: "p", cron: "0 8 * * *" },
      "schedule.created",
    );
    // v1 saw the conversation's creation but nothing of the schedule.
    await v1.ok({ type: "ping" }, "pong");
    expect(v1.frames.map((f) => f.type)).not.toContain("schedule.changed");
  });

  it("creates, lists, updates and deletes; the others hear of each change, the requester once", async () => {
    const server = await serve({ schedules: { timezone: "Europe/Paris" } });
    const a = await connect(server, SCHEDULES);
    const b = await connect(server, SCHEDULES);
    const conv = await createConversation(a);
    const created = await a.ok(
      {
        type: "schedule.create",
        conversation_id: conv,
        prompt: "Summarise my inbox",
        cron: "0 8 * * 1-5",
        name: "Weekday inbox",
      },
      "schedule.created",
    );
    const schedule = created.schedule;
    expect(schedule).toMatchObject({
      conversation_id: conv,
      name: "Weekday inbox",
      prompt: "Summarise my inbox",
      cron: "0 8 * * 1-5",
      at: null,
      timezone: "Europe/Paris",
      enabled: true,
      last_run_at: null,
      last_status: null,
    });
    expect(schedule.schedule_id).toMatch(/^[0-9a-f]{32}$/);
    expect(await b.next("schedule.changed")).toEqual({ type: "schedule.changed", schedule, deleted: false });
    // The requester got its reply, not the broadcast.
    await a.ok({ type: "ping" }, "pong");
    expect(a.frames.filter((f) => f.type === "schedule.changed")).toEqual([]);

    const listed = await b.ok({ type: "schedule.list", conversation_id: conv }, "schedule.snapshot");
    expect(listed.schedules).toEqual([schedule]);
    expect((await b.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toHaveLength(1);

    const updated = await a.ok(
      { type: "schedule.update", schedule_id: schedule.schedule_id, enabled: false, name: null },
      "schedule.changed",
    );
    expect(updated.schedule).toMatchObject({ enabled: false, name: null, next_run_at: null });
    expect(updated.deleted).toBe(false);
    const seen = await b.next("schedule.changed");
    expect(seen).toEqual({ type: "schedule.changed", schedule: updated.schedule, deleted: false });
    expect(seen.request_id).toBeUndefined();

    const deleted = await b.ok(
      { type: "schedule.delete", schedule_id: schedule.schedule_id },
      "schedule.changed",
    );
    expect(deleted).toMatchObject({ deleted: true, schedule: { schedule_id: schedule.schedule_id } });
    expect(await a.next("schedule.changed", (m) => m.deleted)).toMatchObject({ deleted: true });
    expect((await a.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([]);
  });

  it("answers every bad request with the rule it breaks, and keeps the connection", async () => {
    const server = await serve();
    const a = await connect(server, SCHEDULES);
    const conv = await createConversation(a);
    const create = (fields: Record<string, unknown>) =>
      a.request(
        { type: "schedule.create", conversation_id: conv, prompt: "p", ...fields },
        "schedule.created",
      );
    const error = async (p: Promise<unknown>) =>
      (p as Promise<ServerMessageOf<"error">>).then((m) => m.error);
    expect(await error(create({ cron: "61 * * * *" }))).toEqual({
      code: "bad_request",
      message: "cron is not a valid expression (Invalid value for minute)",
    });
    expect(await error(create({ cron: "0 8 * * *", timezone: "Mars/Olympus" }))).toEqual({
      code: "bad_request",
      message: "timezone is not a known IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)",
    });
    expect(await error(create({ at: "2020-01-01T00:00:00Z" }))).toEqual({
      code: "bad_request",
      message: "at is in the past",
    });
    expect((await error(create({}))).code).toBe("bad_request");
    expect((await error(create({ cron: "0 8 * * *", at: "2099-01-01T00:00:00Z" }))).code).toBe("bad_request");
    expect(await error(create({ cron: "0 0 31 2 *" }))).toEqual({
      code: "bad_request",
      message: "cron never matches a date (e.g. 31 February)",
    });
    expect(
      await error(
        a.request(
          { type: "schedule.create", conversation_id: "f".repeat(32), prompt: "p", cron: "0 8 * * *" },
          "schedule.created",
        ),
      ),
    ).toEqual({ code: "conversation_not_found", message: "Conversation not found" });
    expect(
      await error(a.request({ type: "schedule.list", conversation_id: "f".repeat(32) }, "schedule.snapshot")),
    ).toMatchObject({ code: "conversation_not_found" });
    for (const type of ["schedule.update", "schedule.delete"]) {
      expect(
        await error(a.request({ type, schedule_id: "e".repeat(32), enabled: true }, "schedule.changed")),
      ).toEqual({ code: "not_found", message: "No such schedule" });
    }
    expect((await error(create({ cron: "0 8 * * *", prompt: "x".repeat(64_001) }))).code).toBe("too_large");
    expect((await a.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([]);
  });

  it("holds 100 schedules on the server and refuses the 101st", async () => {
    const server = await serve();
    const a = await connect(server, SCHEDULES);
    const conv = await createConversation(a);
    for (let i = 0; i < 100; i++) {
      await a.ok(
        { type: "schedule.create", conversation_id: conv, prompt: `p${i}`, cron: "0 8 * * *" },
        "schedule.created",
      );
    }
    const refused = await a.request(
      { type: "schedule.create", conversation_id: conv, prompt: "one more", cron: "0 8 * * *" },
      "schedule.created",
    );
    expect(refused).toMatchObject({
      type: "error",
      error: { code: "bad_request", message: "A server holds at most 100 schedules" },
    });
  });

  it("a due schedule sends its prompt as a run nobody asked for, to every connection, recorded in history", async () => {
    const clock = new ManualClock(T0);
    const prompts: string[] = [];
    const agent = scriptedBackend("scripted", async (input, sink: TurnSink) => {
      prompts.push(input.text);
      sink.text(`Done: ${input.text}`);
      return { status: "completed" };
    });
    const server = await serve({ clock, agent });
    const a = await connect(server, SCHEDULES);
    const v1 = await connect(server);
    const conv = await createConversation(a);
    const { schedule } = await a.ok(
      {
        type: "schedule.create",
        conversation_id: conv,
        prompt: "Water the plants",
        at: "2026-03-27T12:05:00Z",
      },
      "schedule.created",
    );
    expect(schedule.next_run_at).toBe("2026-03-27T12:05:00.000Z");
    clock.advanceTo(Date.parse("2026-03-27T12:05:00Z"));
    for (const client of [a, v1]) {
      const accepted = await client.next("run.accepted", (m) => m.conversation_id === conv);
      expect(accepted.request_id).toBeUndefined();
      const frames = await client.run(accepted.run_id);
      expect(frames.map((f) => f.type)).toEqual([
        "message.start",
        "message.delta",
        "message.complete",
        "run.finished",
      ]);
      expect(frames.at(-1)).toMatchObject({ status: "completed" });
    }
    expect(prompts).toEqual(["Water the plants"]);
    const history = await v1.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "Water the plants"],
      ["assistant", "Done: Water the plants"],
    ]);
    // The schedule's run is recorded on it: started at its time, completed; a one-shot stays listed.
    const finished = await a.next("schedule.changed", (m) => m.schedule.last_status !== null);
    expect(finished.schedule).toMatchObject({
      enabled: false,
      next_run_at: null,
      last_run_at: "2026-03-27T12:05:00.000Z",
      last_status: "completed",
    });
  });

  /** A conversation whose agent holds the run "slow" until `release()`, and a schedule due at 12:01. */
  async function busyWhenDue(features: string[]) {
    const clock = new ManualClock(T0);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const agent = scriptedBackend("scripted", async (input, sink: TurnSink) => {
      if (input.text === "slow") await gate;
      sink.text(`answer to ${input.text}`);
      return { status: "completed" };
    });
    const server = await serve({ clock, agent });
    const a = await connect(server, features);
    const conv = await createConversation(a);
    await a.ok(
      { type: "schedule.create", conversation_id: conv, prompt: "scheduled", at: "2026-03-27T12:01:00Z" },
      "schedule.created",
    );
    const slow = await a.ok({ type: "chat.send", conversation_id: conv, text: "slow" }, "run.accepted");
    clock.advance(60_000);
    // Fired (the schedule records it) but not started while the slow run is active.
    await a.next("schedule.changed", (m) => m.schedule.last_run_at !== null);
    expect(a.frames.filter((f) => f.type === "run.accepted")).toHaveLength(1);
    return { a, conv, slow, release };
  }

  it("waits its turn behind the conversation's active run, in the queue (queue peers see it there)", async () => {
    const { a, conv, slow, release } = await busyWhenDue([FEATURE_SCHEDULES, FEATURE_QUEUE]);
    const queued = await a.next("queue.changed", (m) => m.queued.length === 1);
    expect(queued.queued).toEqual([{ run_id: expect.any(String), text: "scheduled", position: 1 }]);
    const open = await a.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(open.queue).toEqual(queued.queued);
    release();
    await a.next("run.finished", (m) => m.run_id === slow.run_id);
    // It starts as the queued run it was, then the schedule records how it ended.
    const scheduled = await a.next("run.accepted", (m) => m.run_id !== slow.run_id);
    expect(scheduled.run_id).toBe(queued.queued[0]!.run_id);
    const frames = await a.run(scheduled.run_id);
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({ text: "answer to scheduled" });
    const recorded = await a.next("schedule.changed", (m) => m.schedule.last_status !== null);
    expect(recorded.schedule.last_status).toBe("completed");
  });

  it("a scheduled prompt cancelled while queued never runs, and its schedule records it cancelled", async () => {
    const { a, conv, slow, release } = await busyWhenDue([FEATURE_SCHEDULES, FEATURE_QUEUE]);
    const queued = await a.next("queue.changed", (m) => m.queued.length === 1);
    const run_id = queued.queued[0]!.run_id;
    await a.ok({ type: "run.cancel", conversation_id: conv, run_id }, "run.finished");
    const recorded = await a.next("schedule.changed", (m) => m.schedule.last_status !== null);
    expect(recorded.schedule.last_status).toBe("cancelled");
    release();
    await a.next("run.finished", (m) => m.run_id === slow.run_id);
    await a.ok({ type: "ping" }, "pong");
    expect(a.frames.filter((f) => f.type === "run.accepted").map((f) => f.run_id)).toEqual([slow.run_id]);
  });

  it("without the queue extension a connection sees the scheduled run only when it starts", async () => {
    const { a, slow, release } = await busyWhenDue(SCHEDULES);
    release();
    await a.next("run.finished", (m) => m.run_id === slow.run_id);
    const scheduled = await a.next("run.accepted", (m) => m.run_id !== slow.run_id);
    const frames = await a.run(scheduled.run_id);
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({ text: "answer to scheduled" });
    expect(a.frames.some((f) => f.type === "queue.changed")).toBe(false);
  });

  /** A schedule made on a server that is then stopped: its data dir (for the next one), conversation and schedule. */
  async function scheduledThenStopped(clock: ManualClock, trigger: Record<string, string>) {
    const dataDir = tempDir();
    const first = await startServer({ transport: "memory", clock, dataDir });
    const a = await RawClient.connect(first.wsUrl, { features: SCHEDULES });
    const conv = await createConversation(a);
    const { schedule } = await a.ok(
      { type: "schedule.create", conversation_id: conv, ...trigger },
      "schedule.created",
    );
    a.close();
    await first.close();
    return { dataDir, conv, schedule };
  }

  it("survives a restart: listed again, and it fires at its time", async () => {
    const clock = new ManualClock(T0);
    const { dataDir, conv, schedule } = await scheduledThenStopped(clock, {
      prompt: "after restart",
      cron: "30 12 * * *",
      timezone: "UTC",
    });
    const second = await serve({ clock, dataDir });
    const b = await connect(second, SCHEDULES);
    expect((await b.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([schedule]);
    clock.advanceTo(Date.parse("2026-03-27T12:30:00Z"));
    const accepted = await b.next("run.accepted", (m) => m.conversation_id === conv);
    const done = await b.run(accepted.run_id);
    expect(done.at(-1)).toMatchObject({ type: "run.finished", status: "completed" });
  });

  it("runs an occurrence missed during downtime once at start, within the grace", async () => {
    const clock = new ManualClock(T0);
    const { dataDir, conv } = await scheduledThenStopped(clock, { prompt: "tick", cron: "* * * * *" });
    clock.t = T0 + 3 * 60 * 60_000 + 10_000; // three hours down: 180 missed, the latest 10 s ago
    const second = await serve({ clock, dataDir });
    const b = await connect(second, SCHEDULES);
    const listed = async () => (await b.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules[0];
    await expect.poll(async () => (await listed())?.last_status).toBe("completed");
    expect(await listed()).toMatchObject({ next_run_at: "2026-03-27T15:01:00.000Z" });
    const history = await b.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(history.messages.filter((m) => m.role === "user").map((m) => m.text)).toEqual(["tick"]);
  });

  it("deleting a conversation deletes its schedules", async () => {
    const server = await serve();
    const a = await connect(server, SCHEDULES);
    const b = await connect(server, SCHEDULES);
    const conv = await createConversation(a);
    const keep = await createConversation(a);
    const { schedule } = await a.ok(
      { type: "schedule.create", conversation_id: conv, prompt: "p", cron: "0 8 * * *" },
      "schedule.created",
    );
    await a.ok(
      { type: "schedule.create", conversation_id: keep, prompt: "p", cron: "0 8 * * *" },
      "schedule.created",
    );
    await a.ok({ type: "conversation.delete", conversation_id: conv }, "conversation.deleted");
    expect(await b.next("schedule.changed", (m) => m.deleted)).toMatchObject({
      schedule: { schedule_id: schedule.schedule_id },
      deleted: true,
    });
    const { schedules } = await b.ok({ type: "schedule.list" }, "schedule.snapshot");
    expect(schedules.map((s) => s.conversation_id)).toEqual([keep]);
  });

  it("fires on the real clock", async () => {
    const server = await serve();
    const a = await connect(server, SCHEDULES);
    const conv = await createConversation(a);
    const due = Date.now() + 300;
    await a.ok(
      { type: "schedule.create", conversation_id: conv, prompt: "now", at: new Date(due).toISOString() },
      "schedule.created",
    );
    const accepted = await a.next("run.accepted", () => true, 10_000);
    const finished = await a.next("run.finished", (m) => m.run_id === accepted.run_id);
    expect(finished.status).toBe("completed");
  });
});
