// The activity extension's plan and usage (docs/protocol.md, "Plan and usage"): plan.updated replaces
// the plan (run_id null outside a run) and is kept per conversation across a restart; usage.updated
// carries the agent's latest usage; both are in conversation.history, carry seq and are replayed with
// resume, and only activity connections get any of it.
import {
  FEATURE_ACTIVITY,
  FEATURE_RESUME,
  LIMITS,
  type PlanEntry,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { SIM_CONTEXT_WINDOW, simPlan, simTurnTokens, simUsage } from "../src/agent/simulator/index.js";
import type { AgentHost, TurnResult } from "../src/index.js";
import { createConversation, RawClient, scriptedBackend, send, startServer, useTempDirs } from "./helpers.js";

type Plan = ServerMessageOf<"plan.updated">;
type Usage = ServerMessageOf<"usage.updated">;

const ACTIVITY = [FEATURE_ACTIVITY];
const dir = useTempDirs();
const plans = (c: RawClient) => c.frames.filter((f): f is Plan => f.type === "plan.updated");
const usages = (c: RawClient) => c.frames.filter((f): f is Usage => f.type === "usage.updated");
const open = (c: RawClient, id: string) =>
  c.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");

describe("the simulator's /sim plan and usage", () => {
  it("a plan advances over the run, usage follows each turn; history has the latest; v1 sees none of it", async () => {
    const ts = await startServer({ dataDir: dir() });
    const a = await RawClient.connect(ts.wsUrl, { features: ACTIVITY });
    const v1 = await RawClient.connect(ts.wsUrl);
    const id = await createConversation(a);
    const runId = await send(a, id, "/sim plan");
    await a.run(runId);
    await v1.nextAny((f) => f.type === "run.finished");

    const statuses = plans(a).map((p) => p.entries.map((e) => e.status).join(","));
    expect(statuses).toEqual([
      "pending,pending,pending",
      "in_progress,pending,pending",
      "completed,in_progress,pending",
      "completed,completed,in_progress",
      "completed,completed,completed",
    ]);
    expect(plans(a).every((p) => p.run_id === runId && p.conversation_id === id)).toBe(true);
    expect(plans(a).at(-1)?.entries).toEqual(simPlan(3, false));
    // Usage once, at the end of the turn, before the run's end.
    const first = simUsage(simTurnTokens("/sim plan"));
    expect(usages(a).map(({ used, size, cost }) => ({ used, size, cost }))).toEqual([first]);
    expect(first.size).toBe(SIM_CONTEXT_WINDOW);
    // usage.updated names no run: its place among the conversation's frames.
    const types = a.frames.map((f) => f.type);
    expect(types.indexOf("usage.updated")).toBeGreaterThan(types.lastIndexOf("plan.updated"));
    expect(types.indexOf("usage.updated")).toBeLessThan(types.indexOf("message.complete"));

    // A second turn: usage grows (cumulative per agent session), the plan stays.
    await a.run(await send(a, id, "hello"));
    const second = simUsage(simTurnTokens("/sim plan") + simTurnTokens("hello"));
    expect(usages(a).at(-1)).toMatchObject(second);
    const history = await open(a, id);
    expect(history.plan).toEqual(simPlan(3, false));
    expect(history.usage).toEqual(second);

    const plain = await open(v1, id);
    expect(plain).not.toHaveProperty("plan");
    expect(plain).not.toHaveProperty("usage");
    expect(v1.frames.some((f) => f.type === "plan.updated" || f.type === "usage.updated")).toBe(false);
    // Until the agent reports one, a conversation has neither.
    const fresh = await createConversation(a);
    expect(await open(a, fresh)).toMatchObject({ plan: null, usage: null });
    a.close();
    v1.close();
    await ts.cleanup();
  });

  it("the plan and usage survive a restart (a real SQLite file)", async () => {
    const dataDir = dir();
    const first = await startServer({ dataDir });
    const a = await RawClient.connect(first.wsUrl, { features: ACTIVITY });
    const id = await createConversation(a);
    await a.run(await send(a, id, "/sim plan"));
    const before = await open(a, id);
    a.close();
    await first.close();

    const second = await startServer({ dataDir });
    const b = await RawClient.connect(second.wsUrl, { features: ACTIVITY });
    const after = await open(b, id);
    expect(after.plan).toEqual(simPlan(3, false));
    expect(after.plan).toEqual(before.plan);
    expect(after.usage).toEqual(before.usage);
    // Deleting the conversation drops them.
    await b.ok({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    b.close();
    await second.cleanup();
  });
});

describe("bounds and runs", () => {
  /** A backend whose turn reports what the test says, and that hands the test its host. */
  function reportingBackend() {
    const env = {} as { host: AgentHost };
    const backend = scriptedBackend("reporting", async (input, sink): Promise<TurnResult> => {
      const script = JSON.parse(input.text) as { plan?: PlanEntry[]; usage?: unknown };
      sink.text("Working. ");
      if (script.plan) sink.plan(script.plan);
      if (script.usage) sink.usage(script.usage as never);
      sink.text("Done.");
      return { status: "completed" };
    });
    backend.start = async (host) => {
      env.host = host;
    };
    return { backend, env };
  }

  it("keeps 100 entries of 2,000 characters, mends unknown statuses and bad usage; outside a run, run_id is null", async () => {
    const { backend, env } = reportingBackend();
    const ts = await startServer({ dataDir: dir(), agent: backend, deltaIntervalMs: 0 });
    const a = await RawClient.connect(ts.wsUrl, { features: [FEATURE_ACTIVITY, FEATURE_RESUME] });
    const id = await createConversation(a);
    const entry = (content: string, status = "pending", priority = "low") =>
      ({ content, status, priority }) as PlanEntry;
    const plan = [
      entry("x".repeat(LIMITS.planEntryChars)),
      entry(`${"y".repeat(LIMITS.planEntryChars)}z`, "blocked", "urgent"),
      ...Array.from({ length: LIMITS.planEntries - 1 }, (_, i) => entry(`step ${i}`)),
    ];
    expect(plan).toHaveLength(LIMITS.planEntries + 1);
    const usage = { used: 12.6, size: -5, cost: { amount: Number.NaN, currency: "USD" } };
    const runId = await send(a, id, JSON.stringify({ plan, usage }));
    const frames = await a.run(runId);
    const [sent] = plans(a);
    expect(sent?.entries).toHaveLength(LIMITS.planEntries);
    expect(sent?.entries[0]?.content).toHaveLength(LIMITS.planEntryChars);
    expect(sent?.entries[1]).toEqual(entry("y".repeat(LIMITS.planEntryChars), "pending", "medium"));
    expect(sent?.run_id).toBe(runId);
    expect(usages(a)[0]).toMatchObject({ used: 13, size: 0, cost: null });
    // The answer streamed before the plan goes out before it.
    const types = frames.map((f) => f.type);
    expect(types.indexOf("message.delta")).toBeLessThan(types.indexOf("plan.updated"));

    // Outside any turn (an agent's update between prompts): no run.
    const sessionId = `s-${id}`;
    const laterPlan = a.upcoming((f) => f.type === "plan.updated");
    const laterUsage = a.upcoming((f) => f.type === "usage.updated");
    env.host.plan!(sessionId, [entry("later")]);
    env.host.usage!(sessionId, { used: 1, size: 2, cost: { amount: 0.5, currency: "EUR" } });
    const later = await laterPlan;
    expect(later).toMatchObject({ run_id: null, entries: [entry("later")] });
    expect(await laterUsage).toMatchObject({ used: 1, size: 2, cost: { amount: 0.5, currency: "EUR" } });
    expect(await open(a, id)).toMatchObject({ plan: [entry("later")], usage: { used: 1, size: 2 } });

    // resume: both carry seq and are replayed.
    const seqOf = (f: ServerMessage) => (f as { seq?: number }).seq;
    expect(seqOf(later)).toBeTypeOf("number");
    a.send({
      type: "conversation.open",
      conversation_id: id,
      since_seq: seqOf(later)! - 1,
      request_id: "r-back",
    });
    const resumed = await a.next("conversation.resumed");
    await a.nextAny((f) => f.type === "usage.updated" && seqOf(f) === resumed.to_seq);
    expect(a.frames.filter((f) => f.type === "plan.updated")).toHaveLength(3);
    a.close();
    await ts.cleanup();
  });
});
