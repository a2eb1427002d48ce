/**
 * The `expiry` extension: a question the backend knows the agent gives up on carries
 * `expires_at` (also in `conversation.history`), is withdrawn when it passes, and the
 * conversation is told with a notice; v1 connections see the v1 withdrawal only.
 */
import { FEATURE_EXPIRY, FEATURE_PUSH } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver } from "../../conformance/src/push-receiver.js";
import type { ClarifyAnswer, PermissionAnswer, TurnSink } from "../src/agent/port.js";
import { createConversation, RawClient, scriptedBackend, startServer, type TestServer } from "./helpers.js";
import { FAST_RETRY } from "./push/rig.js";

describe("the expiry extension", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });

  /** A backend that asks one question, expiring after `ms`, and reports the answer it got. */
  async function setup(ms: number | undefined, features: string[] = [FEATURE_EXPIRY]) {
    const answers: Array<PermissionAnswer | ClarifyAnswer> = [];
    const agent = scriptedBackend("scripted", async (input, sink: TurnSink) => {
      const answer =
        input.text === "approve"
          ? await sink.askPermission({
              command: "rm -rf /tmp/x",
              description: "Destructive",
              choices: ["once", "session", "always", "deny"],
              ...(ms === undefined ? {} : { expiresInMs: ms }),
            })
          : await sink.askClarification({
              question: "Which one?",
              choices: null,
              allowFreeText: true,
              ...(ms === undefined ? {} : { expiresInMs: ms }),
            });
      answers.push(answer);
      sink.text(JSON.stringify(answer));
      return { status: "completed" };
    });
    const push = { allowPrivate: true, retry: FAST_RETRY };
    const server = await startServer({ transport: "memory", agent, push });
    servers.push(server);
    const expiry = await RawClient.connect(server.wsUrl, { features });
    const v1 = await RawClient.connect(server.wsUrl);
    clients.push(expiry, v1);
    return { server, expiry, v1, answers, conv: await createConversation(expiry) };
  }

  it("an approval carries expires_at, is withdrawn when it passes, and the conversation hears it expired", async () => {
    const { expiry, v1, answers, conv } = await setup(300);
    const { run_id } = await expiry.ok(
      { type: "chat.send", conversation_id: conv, text: "approve" },
      "run.accepted",
    );
    const asked = await expiry.next("approval.request");
    expect(Date.parse(asked.expires_at!) - Date.parse(asked.ts)).toBe(300);
    const plain = await v1.next("approval.request");
    expect("expires_at" in plain).toBe(false);
    // Pending, it is listed with its expiry for this connection only.
    const open = await expiry.ok(
      { type: "conversation.open", conversation_id: conv },
      "conversation.history",
    );
    expect(open.approvals[0]?.expires_at).toBe(asked.expires_at);
    const openV1 = await v1.ok({ type: "conversation.open", conversation_id: conv }, "conversation.history");
    expect(openV1.approvals[0]).not.toHaveProperty("expires_at");

    const resolved = await expiry.next("approval.resolved");
    expect(resolved).toMatchObject({ approval_id: asked.approval_id, choice: "deny", accepted: false });
    const notice = await expiry.next("message.complete", (m) => m.kind === "notice");
    expect(notice).toMatchObject({
      conversation_id: conv,
      text: "The approval expired unanswered: the agent stopped waiting and treated it as denied.",
    });
    await expiry.next("run.finished", (m) => m.run_id === run_id);
    expect(answers).toEqual([{ outcome: "cancelled", expired: true }]);
    // v1: the withdrawal, no notice.
    await v1.next("approval.resolved");
    await v1.next("run.finished", (m) => m.run_id === run_id);
    expect(v1.frames.filter((f) => f.type === "message.complete" && f.kind === "notice")).toEqual([]);
    // Answering after it expired is like answering any withdrawn question.
    const late = await expiry.request(
      { type: "approval.respond", approval_id: asked.approval_id, choice: "once" },
      "approval.resolved",
    );
    expect(late).toMatchObject({ type: "error", error: { code: "approval_not_found" } });
  });

  it("a clarification expires the same way; answered in time, nothing expires", async () => {
    const { expiry, answers, conv } = await setup(5_000);
    await expiry.ok({ type: "chat.send", conversation_id: conv, text: "ask" }, "run.accepted");
    const asked = await expiry.next("clarify.request");
    expect(Date.parse(asked.expires_at!) - Date.parse(asked.ts)).toBe(5_000);
    await expiry.ok(
      { type: "clarify.respond", clarify_id: asked.clarify_id, response: "this one" },
      "clarify.resolved",
    );
    await expiry.next("run.finished");
    expect(answers).toEqual([{ outcome: "answered", response: "this one" }]);
    expect(expiry.frames.filter((f) => f.type === "message.complete" && f.kind === "notice")).toEqual([]);
  });

  it("a question whose expiry the backend does not know says expires_at: null", async () => {
    const { expiry, conv } = await setup(undefined);
    const { run_id } = await expiry.ok(
      { type: "chat.send", conversation_id: conv, text: "ask" },
      "run.accepted",
    );
    const asked = await expiry.next("clarify.request");
    expect(asked.expires_at).toBeNull();
    await expiry.ok({ type: "run.cancel", conversation_id: conv, run_id }, "run.finished");
  });

  it("the phone's push of an expiring approval carries the same expires_at, and lives only until then", async () => {
    const receiver = await startReceiver();
    try {
      const { expiry, conv } = await setup(20_000, [FEATURE_EXPIRY, FEATURE_PUSH]);
      const phone = receiver.endpoint("phone");
      await expiry.ok(
        { type: "push.subscribe", endpoint: phone.endpoint, keys: phone.keys, events: ["approval"] },
        "push.subscribed",
      );
      await expiry.ok({ type: "chat.send", conversation_id: conv, text: "approve" }, "run.accepted");
      const asked = await expiry.next("approval.request");
      const pushed = await phone.next();
      expect(pushed.payload).toMatchObject({ kind: "approval", approval_id: asked.approval_id });
      expect(pushed.payload.expires_at).toBe(asked.expires_at);
      expect(Number(pushed.headers.ttl)).toBeLessThanOrEqual(20);
      expect(receiver.errors).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
