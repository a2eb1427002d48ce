import type { ApprovalChoice, ServerMessageOf } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  AgentBackend,
  ClarifyAnswer,
  PermissionAnswer,
  TurnResult,
  TurnSettings,
} from "../src/index.js";
import {
  createConversation,
  NO_CAPABILITIES,
  RawClient,
  send,
  startServer,
  type TestServer,
} from "./helpers.js";

/** What the scripted agent's questions were answered, by message text. */
const answers = new Map<string, PermissionAnswer | ClarifyAnswer>();
/** The settings each turn received, by message text. */
const settingsSeen = new Map<string, TurnSettings>();
/** Lets a test withdraw the agent's current question. */
let withdraw = new AbortController();
/** Resolves with the answer to a question asked after its run ended. */
let lateAnswer: Promise<PermissionAnswer> | undefined;

/** An agent without models/reasoning whose questions are driven by the message text. */
const scripted: AgentBackend = {
  name: "scripted",
  capabilities: NO_CAPABILITIES,
  async start() {},
  async createSession(conversationId) {
    return { sessionId: `s-${conversationId}` };
  },
  async prompt(input, sink): Promise<TurnResult> {
    settingsSeen.set(input.text, input.settings);
    withdraw = new AbortController();
    const ask = (choices: unknown[]) =>
      sink.askPermission(
        { command: "deploy", description: "Deploy", choices: choices as ApprovalChoice[] },
        withdraw.signal,
      );
    switch (input.text) {
      case "limited":
        answers.set(input.text, await ask(["deny", "bogus", "once", "once"]));
        break;
      case "no-once":
        answers.set(input.text, await ask(["session", "deny"]));
        break;
      case "no-choices":
        answers.set(input.text, await ask(["bogus"]));
        break;
      case "pre-withdrawn":
        withdraw.abort();
        answers.set(input.text, await ask(["once"]));
        break;
      case "only-choices":
        answers.set(
          input.text,
          await sink.askClarification(
            { question: "Pick one", choices: ["red", "blue"], allowFreeText: false },
            withdraw.signal,
          ),
        );
        break;
      case "clarify-withdrawn":
        answers.set(
          input.text,
          await sink.askClarification(
            { question: "Name?", choices: [], allowFreeText: false },
            withdraw.signal,
          ),
        );
        break;
      case "mid-answer":
        // Text, a notice, more text, a question: each part must be on the wire before what follows it.
        sink.text("Let me ");
        sink.text("check.");
        sink.notice("Heads up");
        sink.text(" Still ");
        sink.text("checking.");
        answers.set(input.text, await ask(["once", "deny"]));
        sink.text(" Done.");
        return { status: "completed" };
      case "late":
        // Asked after the run has ended: answered "cancelled" at once, never broadcast.
        setTimeout(() => {
          lateAnswer = sink.askPermission({ command: "late", description: "late", choices: ["once"] });
        }, 1);
        break;
    }
    sink.text("done");
    return { status: "completed" };
  },
  async close() {},
};

let ts: TestServer;
let a: RawClient;
let b: RawClient;
beforeAll(async () => {
  ts = await startServer({ agent: scripted, transport: "memory" });
  a = await RawClient.connect(ts.wsUrl);
  b = await RawClient.connect(ts.wsUrl);
});
afterAll(async () => {
  a.close();
  b.close();
  await ts.cleanup();
});

describe("decisions against a scripted backend", () => {
  it("offers only valid choices, in the spec's order; a choice outside the spec is bad_request and loses nothing", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "limited");
    const approval = await b.next("approval.request", (m) => m.run_id === runId);
    expect(approval.choices).toEqual(["once", "deny"]);
    expect(approval.session_key).toBe(`s-${id}`);
    const r = await b.request(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "forever" },
      "approval.resolved",
    );
    expect(r).toMatchObject({ type: "error", error: { code: "bad_request" } });
    const open = await a.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(open.approvals.map((p) => p.approval_id)).toEqual([approval.approval_id]);
    // A reason with an approval means nothing and is not passed on.
    await b.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "once", reason: "ignored" },
      "approval.resolved",
    );
    await a.run(runId);
    expect(answers.get("limited")).toEqual({ outcome: "selected", choice: "once" });
  });

  it.each(["session", "always"] as const)(
    "a choice the question does not offer (%s) is accepted and handed to the backend to map",
    async (choice) => {
      const id = await createConversation(a);
      const runId = await send(a, id, "limited");
      const approval = await b.next("approval.request", (m) => m.run_id === runId);
      const resolved = await b.ok(
        { type: "approval.respond", approval_id: approval.approval_id, choice },
        "approval.resolved",
      );
      expect(resolved).toEqual({
        type: "approval.resolved",
        request_id: resolved.request_id,
        approval_id: approval.approval_id,
        choice,
        accepted: true,
      });
      await a.run(runId);
      expect(answers.get("limited")).toEqual({ outcome: "selected", choice });
    },
  );

  it("a question without a valid choice, or already withdrawn, is answered cancelled without a broadcast", async () => {
    const id = await createConversation(a);
    for (const text of ["no-choices", "pre-withdrawn"]) {
      const runId = await send(a, id, text);
      await a.run(runId);
      await b.run(runId);
      expect(answers.get(text)).toEqual({ outcome: "cancelled" });
      expect(b.frames.some((m) => m.type === "approval.request" && m.run_id === runId)).toBe(false);
    }
  });

  it("a clarification with choices only (allow_free_text false) still takes free text, passed on verbatim", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "only-choices");
    const clarify = await b.next("clarify.request", (m) => m.run_id === runId);
    expect(clarify).toMatchObject({ choices: ["red", "blue"], allow_free_text: false });
    const resolved = await b.ok(
      { type: "clarify.respond", clarify_id: clarify.clarify_id, response: "green, please" },
      "clarify.resolved",
    );
    expect(resolved).toMatchObject({ clarify_id: clarify.clarify_id, accepted: true });
    await a.run(runId);
    expect(answers.get("only-choices")).toEqual({ outcome: "answered", response: "green, please" });
  });

  it("the agent withdrawing a clarification broadcasts clarify.resolved accepted:false; a later answer is clarify_not_found", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "clarify-withdrawn");
    const clarify = await b.next("clarify.request", (m) => m.run_id === runId);
    // Empty choices mean free text only.
    expect(clarify).toMatchObject({ choices: null, allow_free_text: true });
    withdraw.abort();
    await a.run(runId);
    await b.run(runId);
    for (const c of [a, b]) {
      expect(
        c.frames.filter((m) => m.type === "clarify.resolved" && m.clarify_id === clarify.clarify_id),
      ).toEqual([{ type: "clarify.resolved", clarify_id: clarify.clarify_id, accepted: false }]);
    }
    expect(answers.get("clarify-withdrawn")).toEqual({ outcome: "cancelled" });
    const late = await a.request(
      { type: "clarify.respond", clarify_id: clarify.clarify_id, response: "x" },
      "clarify.resolved",
    );
    expect(late).toMatchObject({ type: "error", error: { code: "clarify_not_found" } });
  });

  it("the text streamed before a notice or a question reaches clients before it", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "mid-answer");
    const approval = await b.next("approval.request", (m) => m.run_id === runId);
    await b.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "once" },
      "approval.resolved",
    );
    await b.run(runId);
    const seen = b.frames
      .filter(
        (m) =>
          (m.type === "message.delta" && m.conversation_id === id) ||
          (m.type === "message.complete" && m.conversation_id === id) ||
          (m.type === "approval.request" && m.run_id === runId),
      )
      .map((m) =>
        m.type === "approval.request"
          ? "[approval]"
          : m.type === "message.complete" && m.kind
            ? "[notice]"
            : (m as { text: string }).text,
      );
    const notice = seen.indexOf("[notice]");
    const question = seen.indexOf("[approval]");
    expect(seen[notice - 1]).toBe("Let me check.");
    expect(seen[question - 1]).toBe("Let me check. Still checking.");
    expect(seen.at(-1)).toBe("Let me check. Still checking. Done.");
  });

  it("a question asked after the run ended is answered cancelled and never broadcast", async () => {
    const id = await createConversation(a);
    const runId = await send(a, id, "late");
    await a.run(runId);
    await expect.poll(() => lateAnswer).toBeDefined();
    expect(await lateAnswer).toEqual({ outcome: "cancelled" });
    for (const c of [a, b]) {
      expect(c.frames.some((m) => m.type === "approval.request" && m.command === "late")).toBe(false);
    }
  });

  it("without models/reasoning capabilities: set/list/current are not_implemented; turns get null model and effort", async () => {
    const id = await createConversation(a);
    for (const frame of [
      { type: "models.list" },
      { type: "models.list", conversation_id: id },
      { type: "models.current" },
      { type: "model.set", model: "m" },
      { type: "reasoning.current", conversation_id: id },
      { type: "reasoning.set", effort: "high" },
    ]) {
      const r = await a.request(frame, "models.snapshot");
      expect(r, frame.type).toMatchObject({ type: "error", error: { code: "not_implemented" } });
    }
    await a.ok({ type: "yolo.set", conversation_id: id, enabled: true }, "yolo.changed");
    await a.run(await send(a, id, "settings"));
    expect(settingsSeen.get("settings")).toEqual({ model: null, effort: null, yolo: true });
    // YOLO answers "once" only when the agent offers it; otherwise the user is asked as usual.
    const runId = await send(a, id, "limited");
    await a.run(runId);
    expect(answers.get("limited")).toEqual({ outcome: "selected", choice: "once" });
    expect(a.frames.some((m) => m.type === "approval.request" && m.run_id === runId)).toBe(false);
    expect(
      (
        a.frames.find(
          (m) => m.type === "run.finished" && m.run_id === runId,
        ) as ServerMessageOf<"run.finished">
      ).status,
    ).toBe("completed");
    const asked = await send(a, id, "no-once");
    const approval = await b.next("approval.request", (m) => m.run_id === asked);
    expect(approval.choices).toEqual(["session", "deny"]);
    await b.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "deny" },
      "approval.resolved",
    );
    await a.run(asked);
    expect(answers.get("no-once")).toEqual({ outcome: "selected", choice: "deny" });
  });
});
