import type { ServerMessage } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { type CheckContext, expectFinished } from "../context.js";
import { expect } from "../failure.js";
import type { Check } from "../types.js";
import { checkLifecycle } from "./runs.js";

type Of<T extends ServerMessage["type"]> = Extract<ServerMessage, { type: T }>;

const APPROVALS = "Approvals";
const CLARIFY = "Clarifications / choices";
const noRequestId = (m: ServerMessage) => (m as { request_id?: string }).request_id === undefined;

/** The next question of `type` in the conversation; fails at once if its run finishes first. */
function waitQuestion<T extends "approval.request" | "clarify.request">(
  probe: Probe,
  type: T,
  conversationId: string,
): Promise<Of<T>> {
  return probe.waitFor((m) => m.type === type && m.conversation_id === conversationId, type, {
    failOn: (m) => m.type === "run.finished" && m.conversation_id === conversationId,
  }) as Promise<Of<T>>;
}

const waitApproval = (probe: Probe, conversationId: string) =>
  waitQuestion(probe, "approval.request", conversationId);
const waitClarify = (probe: Probe, conversationId: string) =>
  waitQuestion(probe, "clarify.request", conversationId);

/** Run a clarify scenario, check its question, answer it with free text, and expect the reply to echo it. */
async function freeTextAnswer(
  ctx: CheckContext,
  text: string,
  answer: string,
  checkQuestion: (request: Of<"clarify.request">) => void,
): Promise<void> {
  const probe = await ctx.connect();
  const conversation_id = await ctx.createConversation(probe);
  const trace = await ctx.chat(probe, conversation_id, text, {
    onAccepted: async () => {
      const request = await waitClarify(probe, conversation_id);
      checkQuestion(request);
      await probe.expectReply(
        { type: "clarify.respond", clarify_id: request.clarify_id, response: answer },
        "clarify.resolved",
      );
    },
  });
  expectFinished(trace, "completed");
  expect(
    checkLifecycle(trace).includes(answer),
    "the reply does not echo the free-text answer",
    trace.frames.at(-2),
  );
}

export const decisionChecks: Check[] = [
  {
    id: "approvals.unknown_id",
    section: APPROVALS,
    title:
      "approval.respond with an unknown approval_id gets approval_not_found, even with an invalid choice (the ID is checked first)",
    async run(ctx) {
      const probe = await ctx.connect();
      await probe.expectError(
        { type: "approval.respond", approval_id: "no-such-approval", choice: "once" },
        "approval_not_found",
        "an unknown approval_id",
      );
      await probe.expectError(
        { type: "approval.respond", approval_id: "no-such-approval", choice: "maybe" },
        "approval_not_found",
        "an unknown approval_id with an invalid choice",
      );
    },
  },
  {
    id: "approvals.respond",
    section: APPROVALS,
    title:
      "/sim approval: the request reaches every client and the snapshot; one approval.resolved for all; a second answer gets approval_not_found",
    needs: { simulator: true },
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const conversation_id = await ctx.createConversation(a);
      const trace = await ctx.chat(a, conversation_id, "/sim approval", {
        onAccepted: async (runId) => {
          const request = await waitApproval(a, conversation_id);
          expect(request.run_id === runId, "approval.request does not name the active run", request);
          expect(request.choices.includes("once"), 'approval.request does not offer "once"', request);
          await waitApproval(b, conversation_id);
          const snapshot = await b.expectReply(
            { type: "conversation.open", conversation_id },
            "conversation.history",
          );
          expect(
            snapshot.approvals.some((p) => p.approval_id === request.approval_id),
            "conversation.open does not list the pending approval",
            snapshot,
          );
          const resolved = await a.expectReply(
            { type: "approval.respond", approval_id: request.approval_id, choice: "once" },
            "approval.resolved",
          );
          expect(
            resolved.accepted && resolved.choice === "once",
            "approval.resolved is not accepted with once",
            resolved,
          );
          const seen = await b.waitFor(
            (m) => m.type === "approval.resolved" && m.approval_id === request.approval_id,
            "approval.resolved on the other connection",
          );
          expect(
            seen.type === "approval.resolved" && seen.accepted,
            "the other client saw a different resolution",
            seen,
          );
          await b.expectError(
            { type: "approval.respond", approval_id: request.approval_id, choice: "deny" },
            "approval_not_found",
            "a second answer",
          );
        },
      });
      expectFinished(trace, "completed");
      checkLifecycle(trace);
      const resolutions = b.frames.filter((m) => m.type === "approval.resolved");
      expect(
        resolutions.length === 1,
        `${resolutions.length} approval.resolved events, not one`,
        resolutions,
      );
    },
  },
  {
    id: "approvals.cancel_pending",
    section: APPROVALS,
    title: "run.cancel while an approval is pending: one run.finished cancelled and the approval is gone",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      let approvalId = "";
      const trace = await ctx.chat(probe, conversation_id, "/sim approval", {
        onAccepted: async (run_id) => {
          approvalId = (await waitApproval(probe, conversation_id)).approval_id;
          probe.send({ type: "run.cancel", conversation_id, run_id });
        },
      });
      expectFinished(trace, "cancelled");
      await probe.expectError(
        { type: "approval.respond", approval_id: approvalId, choice: "once" },
        "approval_not_found",
        "answering an approval of a cancelled run",
      );
      const snapshot = await probe.expectReply(
        { type: "conversation.open", conversation_id },
        "conversation.history",
      );
      expect(
        snapshot.approvals.length === 0 && snapshot.run === null,
        "the snapshot still shows the run or approval",
        snapshot,
      );
    },
  },
  {
    id: "approvals.withdrawn",
    section: APPROVALS,
    title:
      "/sim timeout: a withdrawn approval is announced (approval.resolved accepted false) and then gets approval_not_found",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      const request = await (async () => {
        probe.send({ type: "chat.send", conversation_id, text: "/sim timeout" });
        return waitApproval(probe, conversation_id);
      })();
      const resolved = await probe.waitFor(
        (m) => m.type === "approval.resolved" && m.approval_id === request.approval_id,
        "approval.resolved for the withdrawn approval",
        { timeoutMs: ctx.timeoutMs + 30_000 },
      );
      expect(
        resolved.type === "approval.resolved" && !resolved.accepted,
        "the withdrawal is not accepted: false",
        resolved,
      );
      expect(noRequestId(resolved), "the withdrawal carries a request_id", resolved);
      await probe.expectError(
        { type: "approval.respond", approval_id: request.approval_id, choice: "once" },
        "approval_not_found",
        "answering a withdrawn approval",
      );
    },
  },
  {
    id: "clarify.unknown_id",
    section: CLARIFY,
    title:
      "clarify.respond with an unknown clarify_id gets clarify_not_found, even with a blank response (the ID is checked first)",
    async run(ctx) {
      const probe = await ctx.connect();
      await probe.expectError(
        { type: "clarify.respond", clarify_id: "no-such-question", response: "yes" },
        "clarify_not_found",
        "an unknown clarify_id",
      );
      await probe.expectError(
        { type: "clarify.respond", clarify_id: "no-such-question", response: " " },
        "clarify_not_found",
        "an unknown clarify_id with a blank response",
      );
    },
  },
  {
    id: "clarify.choice",
    section: CLARIFY,
    title: "/sim clarify: a choice answer resolves once and reaches the agent (echoed in the reply)",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      let answer = "";
      const trace = await ctx.chat(probe, conversation_id, "/sim clarify", {
        onAccepted: async () => {
          const request = await waitClarify(probe, conversation_id);
          expect(request.choices && request.choices.length > 0, "/sim clarify offers no choices", request);
          answer = request.choices[request.choices.length - 1]!;
          const resolved = await probe.expectReply(
            { type: "clarify.respond", clarify_id: request.clarify_id, response: answer },
            "clarify.resolved",
          );
          expect(resolved.accepted, "clarify.resolved is not accepted", resolved);
          await probe.expectError(
            { type: "clarify.respond", clarify_id: request.clarify_id, response: answer },
            "clarify_not_found",
            "a second answer",
          );
        },
      });
      expectFinished(trace, "completed");
      expect(
        checkLifecycle(trace).includes(answer),
        "the reply does not echo the chosen answer",
        trace.frames.at(-2),
      );
    },
  },
  {
    id: "approvals.any_choice",
    section: APPROVALS,
    title:
      "/sim approval limited: a choice the agent does not offer (always) is still accepted, resolved as sent, and applied as the nearest the agent offers",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      const trace = await ctx.chat(probe, conversation_id, "/sim approval limited", {
        onAccepted: async () => {
          const request = await waitApproval(probe, conversation_id);
          expect(!request.choices.includes("always"), 'the question offers "always" after all', request);
          const resolved = await probe.expectReply(
            { type: "approval.respond", approval_id: request.approval_id, choice: "always" },
            "approval.resolved",
          );
          expect(
            resolved.choice === "always" && resolved.accepted,
            "approval.resolved is not the accepted choice the client sent",
            resolved,
          );
        },
      });
      expectFinished(trace, "completed");
      expect(
        checkLifecycle(trace).startsWith("Approved (once"),
        "the agent did not apply the nearest choice it offers (once)",
        trace.frames.at(-2),
      );
    },
  },
  {
    id: "clarify.other_always",
    section: CLARIFY,
    title:
      '/sim clarify choices: free text ("Other") is accepted even with allow_free_text false, and reaches the agent',
    needs: { simulator: true },
    run: (ctx) =>
      freeTextAnswer(ctx, "/sim clarify choices", "conformance other answer", (request) =>
        expect(!request.allow_free_text, "the question allows free text after all", request),
      ),
  },
  {
    id: "clarify.free_text",
    section: CLARIFY,
    title: "/sim clarify free: choices null, free text allowed, and the text reaches the agent",
    needs: { simulator: true },
    run: (ctx) =>
      freeTextAnswer(ctx, "/sim clarify free", "conformance free text answer", (request) =>
        expect(request.choices === null && request.allow_free_text, "not a free-text-only question", request),
      ),
  },
];
