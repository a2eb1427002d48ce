import { LIMITS } from "@pheby/protocol";
import { expect } from "../failure.js";
import type { Check } from "../types.js";

const ERRORS = "Errors";
const LIMITS_SECTION = "Errors (limits)";

/** A conversation ID no server has: 32 hex characters, like real ones. */
export const UNKNOWN_ID = "0123456789abcdef0123456789abcdef";

export const errorChecks: Check[] = [
  {
    id: "errors.invalid_json",
    section: ERRORS,
    title: "a frame that is not JSON gets invalid_json and the connection stays open",
    async run(ctx) {
      const probe = await ctx.connect();
      await probe.expectError("{this is not json", "invalid_json", "a non-JSON frame");
      await probe.ping();
    },
  },
  {
    id: "errors.unknown_type",
    section: ERRORS,
    title: "an unknown type gets unknown_type echoing request_id, and the connection stays open",
    async run(ctx) {
      const probe = await ctx.connect();
      await probe.expectError({ type: "conformance.no_such_type" }, "unknown_type", "an unknown type");
      await probe.ping();
    },
  },
  {
    id: "errors.bad_request",
    section: ERRORS,
    title: "schema violations get bad_request echoing request_id, and the connection stays open",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      await probe.expectError(
        { type: "conversation.rename", conversation_id: id, name: 42 },
        "bad_request",
        "a numeric name",
      );
      await probe.expectError(
        { type: "conversation.open", conversation_id: id, limit: 0 },
        "bad_request",
        "limit 0",
      );
      await probe.expectError(
        { type: "chat.send", conversation_id: id, text: "   " },
        "bad_request",
        "blank chat text",
      );
      await probe.expectError(
        { type: "chat.send", conversation_id: id },
        "bad_request",
        "chat.send without text",
      );
      await probe.expectError(
        { type: "yolo.set", conversation_id: id, enabled: "true" },
        "bad_request",
        'yolo.set with enabled "true" (a string)',
      );
      await probe.expectError("[1,2,3]", "bad_request", "a JSON array");
      await probe.ping();
    },
  },
  {
    id: "errors.conversation_not_found",
    section: "Conversations",
    title:
      "open, rename, delete, chat.send and run.cancel of an unknown conversation get conversation_not_found",
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = UNKNOWN_ID;
      await probe.expectError(
        { type: "conversation.open", conversation_id },
        "conversation_not_found",
        "open",
      );
      await probe.expectError(
        { type: "conversation.rename", conversation_id, name: "x" },
        "conversation_not_found",
        "rename",
      );
      await probe.expectError(
        { type: "conversation.delete", conversation_id },
        "conversation_not_found",
        "delete",
      );
      await probe.expectError(
        { type: "chat.send", conversation_id, text: "hello" },
        "conversation_not_found",
        "chat.send",
      );
      // Even with a run_id: the conversation is checked first (docs/protocol.md, Cancellation).
      await probe.expectError(
        { type: "run.cancel", conversation_id, run_id: "no-such-run" },
        "conversation_not_found",
        "run.cancel",
      );
    },
  },
  {
    id: "limits.chat_text",
    section: LIMITS_SECTION,
    title: `chat text of exactly ${LIMITS.chatTextChars} characters is accepted; one more gets too_large`,
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      await probe.expectError(
        { type: "chat.send", conversation_id, text: "a".repeat(LIMITS.chatTextChars + 1) },
        "too_large",
        `chat text of ${LIMITS.chatTextChars + 1} characters`,
      );
      await probe.ping();
      // Cancel straight away: a real agent need not answer 64,000 characters of "a".
      const trace = await ctx.chat(probe, conversation_id, "a".repeat(LIMITS.chatTextChars), {
        onAccepted: async (run_id) => probe.send({ type: "run.cancel", conversation_id, run_id }),
      });
      expect(trace.finished, "the accepted run never finished");
    },
  },
  {
    id: "limits.frame_size",
    section: LIMITS_SECTION,
    title: "an inbound frame of exactly 2 MiB is processed; 2 MiB + 1 byte gets too_large",
    async run(ctx) {
      const probe = await ctx.connect();
      const frame = (bytes: number, request_id: string) => {
        const head = JSON.stringify({ type: "ping", request_id, pad: "" });
        return head.replace('"pad":""', `"pad":"${"x".repeat(bytes - head.length)}"`);
      };
      const exact = frame(LIMITS.frameBytes, "exact-2mib");
      expect(Buffer.byteLength(exact) === LIMITS.frameBytes, "suite bug: frame is not exactly 2 MiB");
      probe.send(exact);
      const pong = await probe.reply("exact-2mib", "a ping of exactly 2 MiB");
      expect(pong.type === "pong", "a ping frame of exactly 2 MiB was not answered with pong", pong);
      probe.send(frame(LIMITS.frameBytes + 1, "over-2mib"));
      const error = await probe.waitFor((m) => m.type === "error", "too_large for a 2 MiB + 1 frame");
      expect(error.type === "error" && error.error.code === "too_large", "expected too_large", error);
    },
  },
  {
    id: "limits.history_page",
    section: LIMITS_SECTION,
    title: "conversation.open accepts limit 500, and 501 too (the spec caps it at 500; it is not an error)",
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      for (const limit of [LIMITS.historyPage, LIMITS.historyPage + 1]) {
        await probe.expectReply(
          { type: "conversation.open", conversation_id, limit },
          "conversation.history",
        );
      }
    },
  },
];
