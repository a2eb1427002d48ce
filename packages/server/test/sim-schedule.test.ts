/**
 * `/sim schedule`: the simulator schedules itself through Pheby's own `schedule_create` tool, the
 * same code an MCP call takes, through a real server on a real socket. Its schedule waits,
 * disabled and unconfirmed, is announced to the other `schedules` connections and pushed, and runs
 * like the user's once confirmed. Every frame is validated against `@pheby/protocol` (helpers).
 */
import { DEFAULT_FEATURES } from "@pheby/client";
import { FEATURE_SCHEDULES, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver } from "../../conformance/src/push-receiver.js";
import { SIM_SCHEDULE } from "../src/agent/simulator/index.js";
import { createConversation, phebyClient, RawClient, send, startServer, type TestServer } from "./helpers.js";
import { FAST_RETRY } from "./push/rig.js";

describe("/sim schedule", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });
  async function connect(server: TestServer, features: string[] = [FEATURE_SCHEDULES]) {
    const client = await RawClient.connect(server.wsUrl, { features });
    clients.push(client);
    return client;
  }
  const text = (frames: readonly { type: string }[]) =>
    (frames.find((f) => f.type === "message.complete") as ServerMessageOf<"message.complete">).text;

  it("makes an agent's schedule, unconfirmed and disabled, broadcast and pushed like the MCP tool's; confirming enables it", async () => {
    const receiver = await startReceiver();
    const server = await startServer({ push: { allowPrivate: true, retry: FAST_RETRY } });
    servers.push(server);
    const owner = await phebyClient(server, { features: [...DEFAULT_FEATURES, FEATURE_SCHEDULES] });
    const phone = receiver.endpoint("phone");
    await owner.subscribePush(phone, { events: ["message"] });
    const a = await connect(server);
    const b = await connect(server);
    const v1 = await connect(server, []);
    const conv = await createConversation(a);

    const runId = await send(a, conv, "/sim schedule   Water the plants");
    const frames = await a.run(runId);
    expect(frames.at(-1)).toMatchObject({ type: "run.finished", status: "completed" });
    const tool = frames.filter((f) => f.type === "tool.event");
    expect(tool.map((f) => f.status)).toEqual(["running", "completed"]);
    expect(tool[0]).toMatchObject({ tool_name: "schedule_create" });

    const changed = (await b.next("schedule.changed")) as ServerMessageOf<"schedule.changed">;
    expect(changed.deleted).toBe(false);
    expect(changed.schedule).toMatchObject({
      conversation_id: conv,
      prompt: "Water the plants",
      cron: SIM_SCHEDULE.cron,
      enabled: false,
      next_run_at: null,
      created_by: "agent",
      confirmed: false,
      auto_approve: false,
    });
    const id = changed.schedule.schedule_id;
    expect(text(frames)).toBe(
      `I created the schedule ${id} (every day at 09:00). It is not active until you confirm it in Pheby.`,
    );
    // The requester of the run did not ask for the schedule: it hears of it like everyone else.
    expect(a.frames.filter((f) => f.type === "schedule.changed")).toHaveLength(1);
    const pushed = (await phone.next()).payload;
    expect(pushed).toMatchObject({ kind: "schedule", conversation_id: conv, schedule_id: id });
    await v1.ok({ type: "ping" }, "pong");
    expect(v1.frames.map((f) => f.type)).not.toContain("schedule.changed");

    const confirmed = await owner.confirmSchedule(id);
    expect(confirmed).toMatchObject({ schedule_id: id, enabled: true, confirmed: true, created_by: "agent" });
    expect(confirmed.next_run_at).not.toBeNull();
    expect(receiver.errors).toEqual([]);
    owner.close();
    await receiver.close();
  });

  it("without a prompt uses its default; with Pheby's tools off it says so and schedules nothing", async () => {
    const on = await startServer();
    servers.push(on);
    const a = await connect(on);
    const conv = await createConversation(a);
    await a.run(await send(a, conv, "/sim schedule"));
    expect((await a.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toMatchObject([
      { prompt: SIM_SCHEDULE.prompt, created_by: "agent" },
    ]);

    const off = await startServer({ agentTools: { enabled: false } });
    servers.push(off);
    const c = await connect(off);
    const other = await createConversation(c);
    const frames = await c.run(await send(c, other, "/sim schedule Water the plants"));
    expect(text(frames)).toBe("I could not create a schedule: Pheby's tools for agents are turned off.");
    expect(frames.filter((f) => f.type === "tool.event").map((f) => f.status)).toEqual(["running", "failed"]);
    expect((await c.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([]);
  });

  it("the tool's own rules hold: a schedule_create the server refuses is relayed, not made", async () => {
    // Only the tools the operator offers may be called, in process as over the socket.
    const server = await startServer({ agentTools: { tools: ["ask_user"] } });
    servers.push(server);
    const a = await connect(server);
    const conv = await createConversation(a);
    const frames = await a.run(await send(a, conv, "/sim schedule Water the plants"));
    expect(text(frames)).toBe("I could not create a schedule: This tool is not offered.");
    expect((await a.ok({ type: "schedule.list" }, "schedule.snapshot")).schedules).toEqual([]);
  });
});
