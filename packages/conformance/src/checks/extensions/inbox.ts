// The inbox: list state (status, pending, unread, preview, archived), read marks, archive and search.
import { randomBytes } from "node:crypto";
import { CONVERSATION_STATUSES, FEATURE_INBOX, type ServerMessageOf } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: an inbox (`inbox`)";

type Entry = ServerMessageOf<"conversation.snapshot">["conversations"][number];

/** The conversation's entry in `probe`'s list (with `archived` when given), or undefined. */
async function listed(probe: Probe, id: string, archived?: boolean): Promise<Entry | undefined> {
  const snapshot = await probe.expectReply(
    { type: "conversation.list", ...(archived === undefined ? {} : { archived }) },
    "conversation.snapshot",
  );
  return snapshot.conversations.find((c) => c.conversation_id === id);
}

export const inboxChecks: Check[] = [
  {
    id: "extensions.inbox",
    section: SECTION,
    title:
      "inbox: list entries carry status, pending, unread, preview and archived; a run's answer is unread until conversation.read, whose conversation.status reply the same reader's other inbox connection gets without request_id; conversation.archive moves it between the unarchived and archived lists and every other inbox connection hears it; conversation.search finds the message, searches a query FTS5 cannot parse as words, refuses limit 51; a v1 connection sees none of it",
    async run(ctx) {
      const v1 = await ctx.connect("v1");
      const a = await ctx.connectWith("inbox-a", [FEATURE_INBOX], "a v1 server may ignore hello.features");
      const b = await ctx.connectWith("inbox-b", [FEATURE_INBOX]);
      await v1.expectError(
        { type: "conversation.search", query: "x" },
        "unknown_type",
        "search without inbox",
      );

      const created = await a.expectReply(
        { type: "conversation.create", name: "conformance inbox" },
        "conversation.created",
      );
      const id = created.conversation_id;
      expect(
        created.status === "idle" &&
          created.pending === 0 &&
          created.unread === 0 &&
          created.preview === null &&
          created.archived === false,
        "a new conversation's conversation.created is not idle, 0 pending, 0 unread, no preview, unarchived",
        created,
      );

      // A word nobody else wrote, to search for.
      const word = `conformance${randomBytes(6).toString("hex")}`;
      const trace = await ctx.chat(v1, id, `Please say hello (${word}).`);
      const answered = trace.frames.some((f) => f.type === "message.complete" && f.text !== "");
      const row = await listed(b, id);
      if (!row) throw new CheckFailure("the conversation is not in an inbox connection's list", row);
      expect(
        CONVERSATION_STATUSES.includes(row.status!) && row.status !== "running" && row.status !== "waiting",
        `after run.finished the conversation is ${row.status}, not idle or failed`,
        row,
      );
      expect(
        row.preview !== null && row.preview !== undefined,
        "the list entry has no preview after a run",
        row,
      );
      if (answered) expect((row.unread ?? 0) >= 1, "the run's answer is not unread", row);

      const request_id = a.requestId();
      const seenB = b.frames.length;
      a.send({ type: "conversation.read", conversation_id: id, request_id });
      const read = await a.reply(request_id, "conversation.read");
      if (read.type !== "conversation.status")
        throw new CheckFailure("conversation.read was not answered with conversation.status", read);
      expect(
        read.unread === 0 && read.conversation_id === id,
        "after conversation.read unread is not 0",
        read,
      );
      const mirrored = await b.waitFor(
        (m) => m.type === "conversation.status" && m.conversation_id === id && m.unread === 0,
        "conversation.status of the read on the same reader's other connection",
        { from: seenB },
      );
      expect(
        mirrored.request_id === undefined,
        "the other connection's copy carries the request_id",
        mirrored,
      );
      await a.expectError(
        { type: "conversation.read", conversation_id: id, message_id: "not-a-message" },
        "bad_request",
        "conversation.read up to a message of no conversation",
      );

      const seenArchive = b.frames.length;
      const archived = await a.expectReply(
        { type: "conversation.archive", conversation_id: id, archived: true },
        "conversation.status",
      );
      expect(archived.archived === true, "conversation.archive's reply is not archived", archived);
      await b.waitFor(
        (m) => m.type === "conversation.status" && m.conversation_id === id && m.archived,
        "conversation.status of the archive on the other inbox connection",
        { from: seenArchive },
      );
      expect((await listed(b, id)) === undefined, "an archived conversation is in the unarchived list");
      expect(
        (await listed(b, id, true))?.archived === true,
        "archived: true does not list the archived conversation",
      );
      expect(
        (await listed(v1, id)) !== undefined,
        "a v1 list leaves out an archived conversation (v1 lists are unchanged)",
      );
      await a.expectReply(
        { type: "conversation.archive", conversation_id: id, archived: false },
        "conversation.status",
      );

      const found = await a.expectReply({ type: "conversation.search", query: word }, "conversation.results");
      const hit = found.results.find((r) => r.conversation_id === id);
      expect(hit?.snippet.includes(word) === true, "conversation.search does not find the message", found);
      for (const query of ['"unbalanced', "NEAR("]) {
        const reply = await a.expectReply({ type: "conversation.search", query }, "conversation.results");
        expect(reply.query === query, "conversation.results does not echo the query", reply);
      }
      await a.expectError(
        { type: "conversation.search", query: word, limit: 51 },
        "bad_request",
        "conversation.search with limit 51",
      );
      // The probe holds every frame to the connection's features: a v1 connection's inbox frame fails the check.
      await v1.ping();
    },
  },
];
