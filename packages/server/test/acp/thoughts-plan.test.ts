/**
 * What an ACP agent reports beside its answer, end to end through a real Pheby server and the
 * scripted fake agent (a real child process): `agent_thought_chunk` as the `thoughts` extension's
 * frames, `plan` and `usage_update` as the `activity` extension's. Every frame is validated against `@pheby/protocol` for the connection's features
 * (test/setup.ts), so a connection without the feature is proven to get none of it.
 */

import type * as acp from "@agentclientprotocol/sdk";
import { applyDelta, FEATURE_ACTIVITY, FEATURE_THOUGHTS, type ServerMessageOf } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "./pheby.js";

type Step = acp.SessionUpdate | { say: string } | { sleep: number };
const script = (steps: Step[]) => `updates ${JSON.stringify(steps)}`;
const thought = (text: string): Step => ({
  sessionUpdate: "agent_thought_chunk",
  content: { type: "text", text },
});

function useServer(features: string[]) {
  const env = {} as { p: PhebyAcp; work: string };
  beforeAll(async () => {
    const fake = fakeAgentDir();
    env.work = fake.dir;
    env.p = await startPhebyAcp(
      {
        command: FAKE_AGENT_COMMAND,
        cwd: fake.dir,
        allowedFileRoots: [fake.dir],
        respawnBackoffMs: 10,
        requestTimeoutMs: 15_000,
        env: fake.env,
      },
      { transport: "memory", features },
    );
  });
  afterAll(() => env.p.close());
  return env;
}

describe("ACP agent_thought_chunk → thoughts", () => {
  const env = useServer([FEATURE_THOUGHTS]);

  it("streams each thought until the agent answers or calls a tool; the client stitches its deltas", async () => {
    const id = await env.p.create();
    const run = await env.p.chat(
      id,
      script([
        thought("Reading 📄 "),
        // Past the 100 ms coalescing window, so the second chunk is a delta of its own.
        { sleep: 250 },
        thought("the file."),
        { sessionUpdate: "tool_call", toolCallId: "t1", title: "Read", kind: "read", status: "in_progress" },
        thought("Now "),
        thought("answer."),
        { say: "Here you go." },
        {
          sessionUpdate: "agent_thought_chunk",
          content: { type: "image", data: "AA==", mimeType: "image/png" },
        },
      ]),
    );
    expect(run.finished.status).toBe("completed");
    expect(run.complete.text).toBe("Here you go.");
    const completes = framesOf(run.frames, "thought.complete");
    expect(completes.map((c) => c.text)).toEqual(["Reading 📄 the file.", "Now answer."]);
    // @pheby/client stitches thought deltas as it does message deltas: each reaches handlers with
    // offset 0 and the whole thought so far (the wire's UTF-16 offsets: test/thoughts.test.ts).
    for (const c of completes) {
      let text = "";
      const deltas = framesOf(run.frames, "thought.delta").filter((d) => d.thought_id === c.thought_id);
      expect(deltas[0]?.offset).toBe(0);
      for (const d of deltas) text = applyDelta(text, d);
      expect(c.text.startsWith(text)).toBe(true);
      expect(c.run_id).toBe(run.runId);
    }
    const first = framesOf(run.frames, "thought.delta").filter(
      (d) => d.thought_id === completes[0]!.thought_id,
    );
    expect(first.map((d) => [d.offset, d.text])).toEqual([
      [0, "Reading 📄 "],
      [0, "Reading 📄 the file."],
    ]);
    const order = run.frames.map((f) => f.type);
    expect(order.indexOf("thought.complete")).toBeLessThan(order.indexOf("tool.event"));
    expect(order.lastIndexOf("thought.complete")).toBeLessThan(order.indexOf("message.delta"));
  });
});

describe("ACP thoughts and plans name no server path", () => {
  const env = useServer([FEATURE_THOUGHTS, FEATURE_ACTIVITY]);

  it("a thought naming the data dir and the work dir, split across chunks mid-path, arrives scrubbed and append-only", async () => {
    const data = env.p.ts.dataDir;
    const id = await env.p.create();
    const run = await env.p.chat(
      id,
      script([
        // The data dir is cut in two chunks, past the coalescing window: the first delta must not
        // carry its first half.
        thought(`Reading ${data.slice(0, 7)}`),
        { sleep: 250 },
        thought(`${data.slice(7)}/blobs/ab and ${env.work}/src/a.ts, `),
        { sleep: 250 },
        thought(`then ${env.work}.`),
        {
          sessionUpdate: "plan",
          entries: [{ content: `Fix ${env.work}/src/a.ts`, status: "pending", priority: "high" }],
        },
        { say: "ok" },
      ]),
    );
    expect(run.finished.status).toBe("completed");
    const [complete, ...more] = framesOf(run.frames, "thought.complete");
    expect(more).toEqual([]);
    expect(complete?.text).toBe("Reading <data>/blobs/ab and <workdir>/src/a.ts, then <workdir>.");
    const deltas = framesOf(run.frames, "thought.delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas[0]?.text).toBe("Reading ");
    let text = "";
    for (const d of deltas) {
      text = applyDelta(text, d);
      expect(complete!.text.startsWith(text)).toBe(true);
    }
    expect(framesOf(run.frames, "plan.updated")[0]?.entries[0]?.content).toBe("Fix <workdir>/src/a.ts");
    // (The inbox preview quotes the prompt, which names both: the user's own text.)
    const own = run.frames.filter((f) => f.type !== "conversation.status");
    for (const dir of [data, env.work]) expect(JSON.stringify(own)).not.toContain(dir);
  });
});

describe("ACP thoughts on a connection without the feature", () => {
  const env = useServer([]);

  it("are never sent, and history has no thoughts field", async () => {
    const id = await env.p.create();
    const run = await env.p.chat(id, script([thought("private musing"), { say: "ok" }]));
    expect(run.complete.text).toBe("ok");
    // (The inbox's list preview of the prompt quotes the script itself: it is the user's own text.)
    const frames = env.p.frames.filter((f) => f.type !== "conversation.status");
    expect(JSON.stringify(frames)).not.toContain("private musing");
    const history = (await env.p.client.request({
      type: "conversation.open",
      conversation_id: id,
    })) as ServerMessageOf<"conversation.history">;
    expect(history).not.toHaveProperty("thoughts");
  });
});

describe("ACP plan and usage_update → activity", () => {
  const env = useServer([FEATURE_ACTIVITY]);

  it("each plan replaces the last, usage carries the agent's cost or null; history keeps the latest", async () => {
    const id = await env.p.create();
    const entries = (status: "pending" | "in_progress" | "completed") => [
      { content: "Find the bug", status: "completed" as const, priority: "high" as const },
      { content: "Fix it", status, priority: "medium" as const },
    ];
    const run = await env.p.chat(
      id,
      script([
        { sessionUpdate: "plan", entries: entries("pending") },
        { say: "Fixing. " },
        { sessionUpdate: "plan", entries: entries("in_progress") },
        { sessionUpdate: "usage_update", used: 1200, size: 128000 },
        { sessionUpdate: "plan", entries: entries("completed") },
        {
          sessionUpdate: "usage_update",
          used: 5400,
          size: 128000,
          cost: { amount: 0.0123, currency: "USD" },
        },
        { say: "Fixed." },
      ]),
    );
    expect(run.complete.text).toBe("Fixing. Fixed.");
    const plans = framesOf(run.frames, "plan.updated");
    expect(plans.map((p) => p.entries[1]?.status)).toEqual(["pending", "in_progress", "completed"]);
    expect(plans.every((p) => p.run_id === run.runId)).toBe(true);
    expect(plans[0]?.entries).toEqual(entries("pending"));
    // usage.updated belongs to the conversation, not to a run.
    const usage = framesOf(env.p.frames, "usage.updated")
      .filter((u) => u.conversation_id === id)
      .map(({ used, size, cost }) => ({ used, size, cost }));
    expect(usage).toEqual([
      { used: 1200, size: 128000, cost: null },
      { used: 5400, size: 128000, cost: { amount: 0.0123, currency: "USD" } },
    ]);
    const history = (await env.p.client.request({
      type: "conversation.open",
      conversation_id: id,
    })) as ServerMessageOf<"conversation.history">;
    expect(history.plan).toEqual(entries("completed"));
    expect(history.usage).toEqual(usage[1]);
  });
});
