// The `activity` and `thoughts` extensions end to end: @pheby/client against a real @pheby/server (the
// in-memory server, imported from its build by path as in-memory.test.ts explains) and its simulator.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_THOUGHTS, type ServerMessage } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInMemoryServer, createSimulatorBackend } from "../../server/dist/index.js";
import { DEFAULT_FEATURES, PhebyClient } from "../src/index.js";

const SECRET = "activity-secret-0123456789abcdef";
let dataDir: string;
let server: Awaited<ReturnType<typeof createInMemoryServer>>;
let client: PhebyClient;
let conversationId: string;
/** Every frame the client saw that @pheby/protocol rejects: none may come. */
const invalid: unknown[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "pheby-client-activity-"));
  server = await createInMemoryServer({
    secret: SECRET,
    dataDir,
    agent: createSimulatorBackend({ delayMs: 1 }),
  });
  client = new PhebyClient({
    url: server.url,
    secret: SECRET,
    WebSocket: server.WebSocket,
    features: [...DEFAULT_FEATURES, FEATURE_THOUGHTS],
  });
  client.onInvalidFrame((f) => invalid.push(f));
  await client.connect();
  conversationId = (await client.request({ type: "conversation.create", name: "activity" })).conversation_id;
});

afterAll(async () => {
  client?.close();
  await server?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** One run's frames, as chat() yields them. */
async function run(text: string): Promise<ServerMessage[]> {
  const frames: ServerMessage[] = [];
  for await (const frame of client.chat(conversationId, text)) frames.push(frame);
  expect(invalid).toEqual([]);
  return frames;
}

describe("thoughts (/sim think)", () => {
  it("yields the thought whole on every delta, then its complete, before the answer", async () => {
    const frames = await run("/sim think");
    const thought = "The user wants to see me think 🤔 so I reason step by step before answering.";
    const deltas = frames.filter((f) => f.type === "thought.delta");
    expect(deltas.length).toBeGreaterThan(0);
    for (const d of deltas) {
      expect(d.offset).toBe(0);
      expect(thought.startsWith(d.text)).toBe(true);
    }
    expect(deltas.at(-1)!.text.length).toBeLessThanOrEqual(thought.length);
    const complete = frames.find((f) => f.type === "thought.complete");
    expect(complete).toMatchObject({ text: thought, thought_id: deltas[0]!.thought_id });
    // The thinking comes before the answer's text.
    const types = frames.map((f) => f.type);
    expect(types.indexOf("thought.complete")).toBeLessThan(types.indexOf("message.complete"));
    expect(frames.find((f) => f.type === "message.complete")).toMatchObject({
      text: "I thought about it first; this is the answer.",
    });
  });

  it("a client without thoughts gets none of it (the feature is opt-in)", async () => {
    const plain = new PhebyClient({ url: server.url, secret: SECRET, WebSocket: server.WebSocket });
    try {
      await plain.connect();
      expect(plain.features).not.toContain("thoughts");
      const seen: string[] = [];
      plain.on("*", (m) => seen.push(m.type));
      const finished = plain.next("run.finished", (m) => m.conversation_id === conversationId);
      await run("/sim think");
      await finished;
      expect(seen.filter((t) => t.startsWith("thought."))).toEqual([]);
      expect(seen).toContain("message.complete");
    } finally {
      plain.close();
    }
  });
});

describe("plan and usage (/sim plan)", () => {
  it("yields the plan as it advances and the usage after the turn; history carries the latest of both", async () => {
    const frames = await run("/sim plan");
    const plans = frames.filter((f) => f.type === "plan.updated");
    expect(plans.length).toBeGreaterThan(2);
    expect(plans[0]!.entries.map((e) => e.status)).toEqual(["pending", "pending", "pending"]);
    expect(plans.at(-1)!.entries.map((e) => e.status)).toEqual(["completed", "completed", "completed"]);
    expect(plans.at(-1)!.entries.map((e) => e.content)).toEqual([
      "Read the failing test",
      "Fix the port parsing",
      "Update the README",
    ]);
    const accepted = frames[0]!;
    for (const p of plans) expect(p.run_id).toBe(accepted.type === "run.accepted" ? accepted.run_id : "");
    const history = await client.request({ type: "conversation.open", conversation_id: conversationId });
    expect(history.plan).toEqual(plans.at(-1)!.entries);
    const usage = frames.filter((f) => f.type === "usage.updated").at(-1);
    expect(history.usage).toEqual(
      usage
        ? { used: usage.used, size: usage.size, cost: usage.cost }
        : expect.objectContaining({ used: expect.any(Number) }),
    );
    expect(history.usage!.used).toBeGreaterThan(0);
    expect(history.usage!.size).toBeGreaterThanOrEqual(history.usage!.used);
  });
});

describe("tool detail (/sim diff, /sim output)", () => {
  /** Whether this server's simulator has the activity scenarios (the lead merges them with thoughts' server). */
  let scenarios = false;
  beforeAll(async () => {
    const help = await run("/sim help");
    const reply = help.find((f) => f.type === "message.complete");
    scenarios = reply?.type === "message.complete" && reply.text.includes("/sim diff");
    if (!scenarios)
      console.warn("activity-server.test: the simulator has no /sim diff yet; tool detail tests skipped");
  });

  it("an edit's diff comes as the approval's preview and on its tool.event; getTool gives the call's latest state", async (ctx) => {
    if (!scenarios) ctx.skip();
    const answered = client
      .next("approval.request", (m) => m.conversation_id === conversationId)
      .then((a) => {
        void client.request({ type: "approval.respond", approval_id: a.approval_id, choice: "once" });
        return a;
      });
    const frames = await run("/sim diff");
    const approval = await answered;
    const preview = approval.preview?.[0];
    expect(preview).toMatchObject({ type: "diff", path: "src/greeting.ts", outside: false, fragment: false });
    if (preview?.type !== "diff") throw new Error("no diff");
    expect(preview.patch).toMatch(/^@@ -1,5 \+1,5 @@$/m);
    expect(preview.additions).toBeGreaterThan(0);
    expect(preview.deletions).toBeGreaterThan(0);
    const toolCallId = approval.tool_call_id!;
    const events = frames.filter((f) => f.type === "tool.event" && f.tool_call_id === toolCallId);
    expect(events.find((e) => e.type === "tool.event" && e.content)).toMatchObject({ content: [preview] });
    const latest = await client.getTool(conversationId, toolCallId);
    expect(latest).toMatchObject({
      tool_call_id: toolCallId,
      status: "completed",
      kind: "edit",
      content: [preview],
    });
    await expect(client.getTool(conversationId, "no-such-call")).rejects.toMatchObject({ code: "not_found" });
  });

  it("a command's output arrives with its secret redacted", async (ctx) => {
    if (!scenarios) ctx.skip();
    const frames = await run("/sim output");
    const done = frames.filter((f) => f.type === "tool.event" && f.status === "completed").at(-1);
    const text = done?.type === "tool.event" ? done.content?.find((b) => b.type === "text") : undefined;
    expect(text?.type === "text" && text.text).toContain("[REDACTED]");
    expect(JSON.stringify(frames)).not.toContain("sk-simulated-0123456789abcdef");
  });
});
