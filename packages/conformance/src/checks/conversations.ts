import type { ServerMessage } from "@pheby/protocol";
import { expect } from "../failure.js";
import type { Check } from "../types.js";

const hasRequestId = (m: ServerMessage) => (m as { request_id?: string }).request_id !== undefined;

export const conversationChecks: Check[] = [
  {
    id: "conversations.create",
    section: "Conversations (conversation.create)",
    title:
      "create replies conversation.created (32-hex ID) and broadcasts conversation.updated to every client",
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const created = await a.expectReply(
        { type: "conversation.create", name: "Conformance A" },
        "conversation.created",
      );
      const id = created.conversation_id;
      expect(/^[0-9a-f]{32}$/.test(id), "conversation_id is not 32 lowercase hex characters", created);
      expect(created.name === "Conformance A", "conversation.created does not carry the name", created);
      for (const probe of [a, b]) {
        const updated = await probe.waitFor(
          (m) => m.type === "conversation.updated" && m.conversation_id === id,
          "conversation.updated broadcast",
        );
        expect(
          updated.type === "conversation.updated" && updated.name === "Conformance A",
          "wrong name",
          updated,
        );
        expect(!hasRequestId(updated), "the conversation.updated broadcast carries a request_id", updated);
      }
    },
  },
  {
    id: "conversations.list",
    section: "Conversations (conversation.list)",
    title: "conversation.snapshot lists a created conversation with its name",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe, "Conformance list");
      const snapshot = await probe.expectReply({ type: "conversation.list" }, "conversation.snapshot");
      const row = snapshot.conversations.find((c) => c.conversation_id === id);
      expect(row, "the new conversation is missing from conversation.snapshot", snapshot);
      expect(row.name === "Conformance list", "the listed name is wrong", row);
    },
  },
  {
    id: "conversations.rename",
    section: "Conversations (conversation.rename)",
    title: "rename replies conversation.renamed with request_id and broadcasts it without",
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const id = await ctx.createConversation(a);
      const from = b.frames.length;
      const renamed = await a.expectReply(
        { type: "conversation.rename", conversation_id: id, name: "Renamed by conformance" },
        "conversation.renamed",
      );
      expect(
        renamed.name === "Renamed by conformance",
        "conversation.renamed carries the wrong name",
        renamed,
      );
      const broadcast = await b.waitFor(
        (m) => m.type === "conversation.renamed" && m.conversation_id === id,
        "conversation.renamed broadcast on the other connection",
        { from },
      );
      expect(!hasRequestId(broadcast), "the conversation.renamed broadcast carries a request_id", broadcast);
      const snapshot = await b.expectReply({ type: "conversation.list" }, "conversation.snapshot");
      const row = snapshot.conversations.find((c) => c.conversation_id === id);
      expect(row?.name === "Renamed by conformance", "conversation.list does not show the new name", row);
    },
  },
  {
    id: "conversations.delete",
    section: "Conversations (conversation.delete)",
    title: "delete replies conversation.deleted; the conversation is gone from list and open",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      await probe.expectReply({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
      const snapshot = await probe.expectReply({ type: "conversation.list" }, "conversation.snapshot");
      expect(
        !snapshot.conversations.some((c) => c.conversation_id === id),
        "a deleted conversation is still listed",
        snapshot,
      );
      await probe.expectError(
        { type: "conversation.open", conversation_id: id },
        "conversation_not_found",
        "open after delete",
      );
    },
  },
  {
    id: "conversations.open_empty",
    section: "Conversations (conversation.open)",
    title: "a new conversation opens empty: no messages, has_more false, no run, no pending decisions",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      const history = await probe.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      );
      expect(history.conversation_id === id, "conversation.history names another conversation", history);
      expect(
        history.messages.length === 0 &&
          !history.has_more &&
          history.run === null &&
          history.approvals.length === 0 &&
          history.clarifications.length === 0,
        "a new conversation's snapshot is not empty",
        history,
      );
    },
  },
  {
    id: "paging.contract",
    section: "Conversations (conversation.open paging)",
    title:
      "newest page first in chronological order, has_more, exclusive before_message_id cursor, unknown cursor rejected",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe, "Conformance paging");
      const turns = 6;
      for (let i = 1; i <= turns; i++) {
        // With the simulator, "/sim long 1" is the quickest possible reply.
        const text = ctx.options.simulator === false ? `Paging message ${i}` : "/sim long 1";
        const trace = await ctx.chat(probe, id, text);
        expect(trace.finished.status === "completed", `turn ${i} did not complete`, trace.finished);
      }
      const full = await probe.expectReply(
        { type: "conversation.open", conversation_id: id, limit: 500 },
        "conversation.history",
      );
      expect(
        full.messages.length === turns * 2,
        `expected ${turns * 2} messages, got ${full.messages.length}`,
        full,
      );
      expect(!full.has_more, "has_more is true although every message fits one page", full);
      const pages: string[][] = [];
      let before: string | undefined;
      for (;;) {
        const page = await probe.expectReply(
          {
            type: "conversation.open",
            conversation_id: id,
            limit: 5,
            ...(before ? { before_message_id: before } : {}),
          },
          "conversation.history",
        );
        expect(page.messages.length <= 5, "a page holds more than limit messages", page);
        pages.unshift(page.messages.map((m) => m.message_id));
        if (!page.has_more) break;
        expect(page.messages.length > 0 && pages.length <= turns * 2, "has_more stays true forever", page);
        before = page.messages[0]!.message_id;
      }
      const paged = pages.flat();
      const expected = full.messages.map((m) => m.message_id);
      expect(
        paged.join() === expected.join(),
        "paging backwards with before_message_id does not reproduce the full history in order, without gaps or duplicates",
        { paged, expected },
      );
      expect(pages[pages.length - 1]!.length === 5, "the first page is not the newest 5 messages", pages);
      await probe.expectError(
        { type: "conversation.open", conversation_id: id, before_message_id: "no-such-message-id" },
        "bad_request",
        "an unknown before_message_id",
      );
    },
  },
];
