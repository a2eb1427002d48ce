import type { ServerMessage, ServerMessageOf } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { beforeAll, describe, expect, it } from "vitest";
import {
  SIM_APPROVAL_COMMAND,
  SIM_CLARIFY,
  SIM_CLARIFY_FREE,
  SIM_LIMITED_CHOICES,
} from "../src/agent/simulator/index.js";
import { createSimulatorBackend } from "../src/index.js";
import {
  createConversation,
  RawClient,
  send,
  startServer,
  tempDir,
  useServerWithTwoClients,
} from "./helpers.js";

// /sim timeout withdraws its approval after 30 ms here; nothing else in this file depends on time.
const env = useServerWithTwoClients({
  transport: "memory",
  agent: createSimulatorBackend({ delayMs: 1, laterDelayMs: 20, approvalTimeoutMs: 30 }),
});
let a: RawClient; // the sender
let b: RawClient; // another client of the same user
beforeAll(() => {
  ({ a, b } = env);
});

type Approval = ServerMessageOf<"approval.request">;
type Clarify = ServerMessageOf<"clarify.request">;

/** Send `text` in a conversation and return the run ID and the approval both clients received. */
async function approvalRun(client: RawClient, conversationId: string, text = "/sim approval") {
  const runId = await send(client, conversationId, text);
  const seen = await Promise.all(
    [a, b].map((c) => c.nextAny((m) => m.type === "approval.request" && m.run_id === runId)),
  );
  expect(seen[1]).toEqual(seen[0]);
  return { runId, approval: seen[0] as Approval };
}

async function clarifyRun(conversationId: string, text: string) {
  const runId = await send(a, conversationId, text);
  const seen = await Promise.all(
    [a, b].map((c) => c.nextAny((m) => m.type === "clarify.request" && m.run_id === runId)),
  );
  expect(seen[1]).toEqual(seen[0]);
  return { runId, clarify: seen[0] as Clarify };
}

/** Run a clarify scenario, answer it from `client`, and return the question, resolution and reply. */
async function answerClarify(client: RawClient, conversationId: string, text: string, response: string) {
  const { runId, clarify } = await clarifyRun(conversationId, text);
  const resolved = await client.ok(
    { type: "clarify.respond", clarify_id: clarify.clarify_id, response },
    "clarify.resolved",
  );
  await finished(runId);
  return { clarify, resolved, reply: finalText(runId) };
}

/** Both clients' frames matching `pred`, checked to be the same. */
function onBoth(pred: (m: ServerMessage) => boolean): ServerMessage[] {
  const mine = a.frames.filter(pred);
  expect(b.frames.filter(pred)).toEqual(mine);
  return mine;
}

async function finished(runId: string) {
  await Promise.all([a, b].map((c) => c.run(runId)));
  const [done] = onBoth((m) => m.type === "run.finished" && m.run_id === runId);
  return done as ServerMessageOf<"run.finished">;
}

function finalText(runId: string): string {
  const complete = a.frames.find(
    (m) => m.type === "message.complete" && m.message_id === messageIdOf(a.frames, runId),
  ) as ServerMessageOf<"message.complete">;
  return complete.text;
}

function toolEnds(runId: string) {
  return onBoth((m) => m.type === "tool.event" && m.run_id === runId && m.status !== "running");
}

async function snapshot(conversationId: string) {
  return a.ok({ type: "conversation.open", conversation_id: conversationId }, "conversation.history");
}

describe("approvals on /sim approval", () => {
  it("broadcasts every field the spec lists, and lists it in conversation.open while pending", async () => {
    const id = await createConversation(a);
    const conv = await a.ok({ type: "conversation.list" }, "conversation.snapshot");
    const sessionId = conv.conversations.find((c) => c.conversation_id === id)!.session_id;
    const { runId, approval } = await approvalRun(a, id);
    expect(approval).toMatchObject({
      type: "approval.request",
      session_key: sessionId,
      conversation_id: id,
      run_id: runId,
      command: SIM_APPROVAL_COMMAND,
      description: expect.stringContaining("rm -rf"),
      choices: ["once", "session", "always", "deny"],
    });
    expect(approval.approval_id).toMatch(/^[0-9a-f]{32}$/);
    expect(approval.request_id).toBeUndefined();
    const { type: _type, ...pending } = approval;
    const open = await snapshot(id);
    expect(open.approvals).toEqual([pending]);
    expect(open.run).toMatchObject({ run_id: runId, status: "running" });
    expect(open.tools).toEqual([expect.objectContaining({ tool_name: "shell", status: "running" })]);
    // b answers: the single approval.resolved reaches both clients with b's request_id.
    const resolved = await b.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "once" },
      "approval.resolved",
    );
    expect(resolved).toEqual({
      type: "approval.resolved",
      request_id: resolved.request_id,
      approval_id: approval.approval_id,
      choice: "once",
      accepted: true,
    });
    expect((await finished(runId)).status).toBe("completed");
    expect(onBoth((m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id)).toEqual([
      resolved,
    ]);
    expect(toolEnds(runId)).toEqual([expect.objectContaining({ tool_name: "shell", status: "completed" })]);
    expect(finalText(runId)).toBe(`Approved (once): I ran \`${SIM_APPROVAL_COMMAND}\`.`);
    expect((await snapshot(id)).approvals).toEqual([]);
    // once is once: the next /sim approval asks again.
    const again = await approvalRun(a, id);
    await a.ok(
      { type: "approval.respond", approval_id: again.approval.approval_id, choice: "deny" },
      "approval.resolved",
    );
    await finished(again.runId);
  });

  it("deny fails the tool, ends the run completed, and passes the reason to the agent", async () => {
    const id = await createConversation(a);
    const { runId, approval } = await approvalRun(a, id);
    const resolved = await a.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "deny", reason: "not on prod" },
      "approval.resolved",
    );
    expect(resolved).toMatchObject({ choice: "deny", accepted: true });
    expect((await finished(runId)).status).toBe("completed");
    expect(toolEnds(runId)).toEqual([
      expect.objectContaining({ tool_name: "shell", status: "failed", error: "Denied by the user" }),
    ]);
    expect(finalText(runId)).toBe(
      `Denied: I did not run \`${SIM_APPROVAL_COMMAND}\` and will not retry. Your reason: "not on prod".`,
    );
  });

  it("session runs the tool and is honoured by a later /sim approval in the same conversation only", async () => {
    const id = await createConversation(a);
    const first = await approvalRun(a, id);
    await a.ok(
      { type: "approval.respond", approval_id: first.approval.approval_id, choice: "session" },
      "approval.resolved",
    );
    await finished(first.runId);
    expect(finalText(first.runId)).toBe(`Approved (session): I ran \`${SIM_APPROVAL_COMMAND}\`.`);

    const second = await send(a, id, "/sim approval");
    await finished(second);
    expect(onBoth((m) => m.type === "approval.request" && m.run_id === second)).toEqual([]);
    expect(toolEnds(second)).toEqual([expect.objectContaining({ status: "completed" })]);
    expect(finalText(second)).toContain("without asking: you approved it for this conversation earlier");

    const other = await createConversation(a);
    const third = await approvalRun(a, other);
    await a.ok(
      { type: "approval.respond", approval_id: third.approval.approval_id, choice: "deny" },
      "approval.resolved",
    );
    expect(finalText((await finished(third.runId)).run_id)).toMatch(/^Denied/);
  });

  it("two clients answering at once: the first wins, the second gets approval_not_found", async () => {
    const id = await createConversation(a);
    const { runId, approval } = await approvalRun(a, id);
    const answer = (choice: string, request_id: string) => ({
      type: "approval.respond",
      approval_id: approval.approval_id,
      choice,
      request_id,
    });
    // Both are on the wire before either is answered.
    a.send(answer("once", "from-a"));
    b.send(answer("deny", "from-b"));
    const replies = await Promise.all([
      a.nextAny((m) => m.request_id === "from-a"),
      b.nextAny((m) => m.request_id === "from-b"),
    ]);
    const winner = replies.find((m) => m.type === "approval.resolved");
    const loser = replies.find((m) => m.type === "error");
    expect(winner).toBeDefined();
    expect(loser).toMatchObject({ error: { code: "approval_not_found" } });
    await finished(runId);
    expect(
      onBoth((m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id),
    ).toHaveLength(1);
    // An already-answered ID stays not found.
    const late = await a.request(answer("once", "late"), "approval.resolved");
    expect(late).toMatchObject({ type: "error", error: { code: "approval_not_found" } });
  });

  it("unknown and stale IDs get approval_not_found, a choice outside the spec gets bad_request", async () => {
    for (const approval_id of ["0".repeat(32), "nope"]) {
      const r = await a.request(
        { type: "approval.respond", approval_id, choice: "once" },
        "approval.resolved",
      );
      expect(r).toMatchObject({ type: "error", error: { code: "approval_not_found" } });
    }
    const id = await createConversation(a);
    const { runId, approval } = await approvalRun(a, id);
    for (const bad of [
      { choice: "maybe" },
      { choice: null },
      {},
      { choice: "deny", reason: "x".repeat(4_001) },
    ]) {
      const r = await a.request(
        { type: "approval.respond", approval_id: approval.approval_id, ...bad },
        "approval.resolved",
      );
      expect(r).toMatchObject({ type: "error", error: { code: "bad_request" } });
    }
    // Nothing was lost: the approval is still pending and a 4,000-character reason is accepted.
    expect((await snapshot(id)).approvals).toHaveLength(1);
    const ok = await a.ok(
      {
        type: "approval.respond",
        approval_id: approval.approval_id,
        choice: "deny",
        reason: "y".repeat(4_000),
      },
      "approval.resolved",
    );
    expect(ok.choice).toBe("deny");
    await finished(runId);
  });

  it("/sim timeout: the agent withdraws the approval; clients learn it from approval.resolved accepted:false", async () => {
    const id = await createConversation(a);
    const { runId, approval } = await approvalRun(a, id, "/sim timeout");
    expect((await finished(runId)).status).toBe("completed");
    const [withdrawn] = onBoth(
      (m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id,
    );
    expect(withdrawn).toEqual({
      type: "approval.resolved",
      approval_id: approval.approval_id,
      choice: "deny",
      accepted: false,
    });
    expect(toolEnds(runId)).toEqual([expect.objectContaining({ status: "failed" })]);
    expect(finalText(runId)).toBe("The approval timed out and was withdrawn, so nothing ran.");
    expect((await snapshot(id)).approvals).toEqual([]);
    const late = await a.request(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "once" },
      "approval.resolved",
    );
    expect(late).toMatchObject({ type: "error", error: { code: "approval_not_found" } });
  });

  it("cancel while an approval is pending: withdrawn first, then exactly one run.finished cancelled", async () => {
    const id = await createConversation(a);
    const { runId, approval } = await approvalRun(a, id);
    const done = await a.ok({ type: "run.cancel", conversation_id: id, run_id: runId }, "run.finished");
    expect(done).toMatchObject({ status: "cancelled", run_id: runId });
    await b.run(runId);
    for (const c of [a, b]) {
      expect(c.frames.filter((m) => m.type === "run.finished" && m.run_id === runId)).toHaveLength(1);
      const withdrawnAt = c.frames.findIndex(
        (m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id,
      );
      expect(c.frames[withdrawnAt]).toEqual({
        type: "approval.resolved",
        approval_id: approval.approval_id,
        choice: "deny",
        accepted: false,
      });
      expect(withdrawnAt).toBeLessThan(
        c.frames.findIndex((m) => m.type === "run.finished" && m.run_id === runId),
      );
    }
    expect(toolEnds(runId)).toEqual([expect.objectContaining({ tool_name: "shell", status: "cancelled" })]);
    const open = await snapshot(id);
    expect(open.approvals).toEqual([]);
    expect(open.run).toBeNull();
    const late = await b.request(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "once" },
      "approval.resolved",
    );
    expect(late).toMatchObject({ type: "error", error: { code: "approval_not_found" } });
  });

  it("deleting the conversation withdraws its pending approval", async () => {
    const id = await createConversation(a);
    const { approval } = await approvalRun(a, id);
    await a.ok({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    await b.nextAny((m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id);
    expect(onBoth((m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id)).toEqual([
      { type: "approval.resolved", approval_id: approval.approval_id, choice: "deny", accepted: false },
    ]);
  });
});

describe("choices the agent does not offer", () => {
  it.each([
    ["always", "Approved (once, the nearest I offer to your always)"],
    ["session", "Approved (once, the nearest I offer to your session)"],
    ["once", "Approved (once)"],
    ["deny", "Denied"],
  ] as const)(
    "/sim approval limited offers once and deny; %s is accepted and applied as the nearest",
    async (choice, said) => {
      const id = await createConversation(a);
      const { runId, approval } = await approvalRun(a, id, "/sim approval limited");
      expect(approval.choices).toEqual(SIM_LIMITED_CHOICES);
      const resolved = await b.ok(
        { type: "approval.respond", approval_id: approval.approval_id, choice },
        "approval.resolved",
      );
      expect(resolved).toMatchObject({ approval_id: approval.approval_id, choice, accepted: true });
      expect((await finished(runId)).status).toBe("completed");
      expect(finalText(runId)).toMatch(new RegExp(`^${said.replace(/[()]/g, "\\$&")}`));
    },
  );

  it("/sim clarify choices (allow_free_text false) still accepts free text, which reaches the agent verbatim", async () => {
    const id = await createConversation(a);
    const pick = await answerClarify(a, id, "/sim clarify choices", "staging");
    expect(pick.clarify).toMatchObject({ choices: SIM_CLARIFY.choices, allow_free_text: false });
    expect(pick.reply).toBe('You answered: "staging".');
    const other = await answerClarify(b, id, "/sim clarify choices", "the canary cluster");
    expect(other.resolved).toMatchObject({ clarify_id: other.clarify.clarify_id, accepted: true });
    expect(other.reply).toBe('You answered in your own words: "the canary cluster".');
  });
});

describe("clarifications", () => {
  it("/sim clarify offers choices and free text; the chosen value is echoed into the reply", async () => {
    const id = await createConversation(a);
    const { runId, clarify } = await clarifyRun(id, "/sim clarify");
    expect(clarify).toMatchObject({
      conversation_id: id,
      run_id: runId,
      question: SIM_CLARIFY.question,
      choices: SIM_CLARIFY.choices,
      allow_free_text: true,
    });
    const { type: _t, ...pending } = clarify;
    expect((await snapshot(id)).clarifications).toEqual([pending]);
    const resolved = await b.ok(
      { type: "clarify.respond", clarify_id: clarify.clarify_id, response: "production" },
      "clarify.resolved",
    );
    expect(resolved).toEqual({
      type: "clarify.resolved",
      request_id: resolved.request_id,
      clarify_id: clarify.clarify_id,
      accepted: true,
    });
    expect((await finished(runId)).status).toBe("completed");
    expect(onBoth((m) => m.type === "clarify.resolved" && m.clarify_id === clarify.clarify_id)).toEqual([
      resolved,
    ]);
    expect(finalText(runId)).toBe('You answered: "production".');
    expect((await snapshot(id)).clarifications).toEqual([]);
    const again = await a.request(
      { type: "clarify.respond", clarify_id: clarify.clarify_id, response: "staging" },
      "clarify.resolved",
    );
    expect(again).toMatchObject({ type: "error", error: { code: "clarify_not_found" } });
  });

  it("free text is accepted next to choices; /sim clarify free has choices null", async () => {
    const id = await createConversation(a);
    const first = await answerClarify(a, id, "/sim clarify", "the canary cluster");
    expect(first.reply).toBe('You answered: "the canary cluster".');

    const free = await clarifyRun(id, "/sim clarify free");
    expect(free.clarify).toMatchObject({ question: SIM_CLARIFY_FREE, choices: null, allow_free_text: true });
    for (const bad of [{ response: " \n" }, { response: 5 }, {}]) {
      const r = await a.request(
        { type: "clarify.respond", clarify_id: free.clarify.clarify_id, ...bad },
        "clarify.resolved",
      );
      expect(r).toMatchObject({ type: "error", error: { code: "bad_request" } });
    }
    await a.ok(
      { type: "clarify.respond", clarify_id: free.clarify.clarify_id, response: "Pheby 1.0" },
      "clarify.resolved",
    );
    await finished(free.runId);
    expect(finalText(free.runId)).toBe('You answered: "Pheby 1.0".');
  });

  it("two answers at once: one clarify.resolved, the other gets clarify_not_found; unknown IDs too", async () => {
    const id = await createConversation(a);
    const { runId, clarify } = await clarifyRun(id, "/sim clarify");
    a.send({
      type: "clarify.respond",
      clarify_id: clarify.clarify_id,
      response: "staging",
      request_id: "ca",
    });
    b.send({
      type: "clarify.respond",
      clarify_id: clarify.clarify_id,
      response: "production",
      request_id: "cb",
    });
    const replies = await Promise.all([
      a.nextAny((m) => m.request_id === "ca"),
      b.nextAny((m) => m.request_id === "cb"),
    ]);
    expect(replies.map((m) => m.type).sort()).toEqual(["clarify.resolved", "error"]);
    expect(replies.find((m) => m.type === "error")).toMatchObject({ error: { code: "clarify_not_found" } });
    await finished(runId);
    expect(onBoth((m) => m.type === "clarify.resolved" && m.clarify_id === clarify.clarify_id)).toHaveLength(
      1,
    );
    const unknown = await a.request(
      { type: "clarify.respond", clarify_id: "x", response: "y" },
      "clarify.resolved",
    );
    expect(unknown).toMatchObject({ type: "error", error: { code: "clarify_not_found" } });
  });

  it("cancel while a clarification is pending withdraws it (accepted:false) before the one run.finished", async () => {
    const id = await createConversation(a);
    const { runId, clarify } = await clarifyRun(id, "/sim clarify");
    await a.ok({ type: "run.cancel", conversation_id: id, run_id: runId }, "run.finished");
    await finished(runId);
    const withdrawn = onBoth((m) => m.type === "clarify.resolved" && m.clarify_id === clarify.clarify_id);
    expect(withdrawn).toEqual([
      { type: "clarify.resolved", clarify_id: clarify.clarify_id, accepted: false },
    ]);
    expect(onBoth((m) => m.type === "run.finished" && m.run_id === runId)).toEqual([
      expect.objectContaining({ status: "cancelled" }),
    ]);
    expect((await snapshot(id)).clarifications).toEqual([]);
  });
});

describe("on their own server", () => {
  it("always runs the tool and is honoured in every conversation of the agent", async () => {
    // Its own server: an "always" approval changes every later /sim approval.
    const ts = await startServer({ transport: "memory" });
    const c = await RawClient.connect(ts.wsUrl);
    try {
      const id = await createConversation(c);
      const runId = await send(c, id, "/sim approval");
      const approval = await c.next("approval.request");
      await c.ok(
        { type: "approval.respond", approval_id: approval.approval_id, choice: "always" },
        "approval.resolved",
      );
      const frames = await c.run(runId);
      expect(frames.find((m) => m.type === "message.complete")).toMatchObject({
        text: `Approved (always): I ran \`${SIM_APPROVAL_COMMAND}\`.`,
      });
      const other = await createConversation(c);
      const next = await send(c, other, "/sim approval");
      const later = await c.run(next);
      expect(c.frames.some((m) => m.type === "approval.request" && m.run_id === next)).toBe(false);
      expect(later.find((m) => m.type === "message.complete")).toMatchObject({
        text: expect.stringContaining("you approved it for every conversation earlier"),
      });
    } finally {
      c.close();
      await ts.cleanup();
    }
  });

  it("shutting down withdraws pending approvals; after a restart nothing is pending and the run is gone", async () => {
    const dataDir = tempDir();
    const first = await startServer({ dataDir, transport: "memory" });
    const c = await RawClient.connect(first.wsUrl);
    const id = await createConversation(c);
    const runId = await send(c, id, "/sim approval");
    const approval = await c.next("approval.request");
    await first.close();
    await c.closed;
    expect(c.frames.filter((m) => m.type === "approval.resolved")).toEqual([
      { type: "approval.resolved", approval_id: approval.approval_id, choice: "deny", accepted: false },
    ]);
    expect(c.frames.find((m) => m.type === "run.finished")).toMatchObject({
      run_id: runId,
      status: "failed",
    });

    const second = await startServer({ dataDir, transport: "memory" });
    const d = await RawClient.connect(second.wsUrl);
    try {
      const open = await d.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
      expect(open).toMatchObject({ approvals: [], clarifications: [], run: null });
      const late = await d.request(
        { type: "approval.respond", approval_id: approval.approval_id, choice: "once" },
        "approval.resolved",
      );
      expect(late).toMatchObject({ type: "error", error: { code: "approval_not_found" } });
    } finally {
      d.close();
      await second.cleanup();
    }
  });
});
