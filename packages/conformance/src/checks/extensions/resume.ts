import {
  FEATURE_RESUME,
  type ServerMessage,
  type ServerMessageOf,
  stripDisabledFields,
} from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

const SECTION = "Extension: resume after a drop (`resume`)";

/** A frame's `seq`, or undefined. */
const seqOf = (m: ServerMessage): number | undefined => (m as { seq?: number }).seq;
const conversationOf = (m: ServerMessage): string | undefined =>
  (m as { conversation_id?: string }).conversation_id;

/** Without the `request_id` one connection's copy carries. */
function shared(m: ServerMessage): ServerMessage {
  const { request_id: _id, ...rest } = m as ServerMessage & { request_id?: string };
  return rest as ServerMessage;
}

/** A frame as a connection that enabled no extension gets it (`seq` and the like removed). */
function asV1(m: ServerMessage): ServerMessage {
  const v1 = structuredClone(m) as ServerMessage & Record<string, unknown>;
  stripDisabledFields(v1, m.type, new Set());
  return v1;
}

/** `conversation.open` (with `since_seq` when given): its reply, whichever of the two it is. */
async function open(probe: Probe, conversationId: string, sinceSeq?: number): Promise<ServerMessage> {
  const request_id = probe.requestId();
  probe.send({
    type: "conversation.open",
    conversation_id: conversationId,
    request_id,
    ...(sinceSeq === undefined ? {} : { since_seq: sinceSeq }),
  });
  const reply = await probe.reply(request_id, "conversation.open");
  if (reply.type !== "conversation.history" && reply.type !== "conversation.resumed")
    throw new CheckFailure(`conversation.open was answered with ${reply.type}`, reply);
  return reply;
}

/** A resume connection's position in a conversation: `conversation.history.seq`. */
async function position(probe: Probe, conversationId: string): Promise<number> {
  const history = await open(probe, conversationId);
  const seq = seqOf(history);
  expect(Number.isInteger(seq), "conversation.history on a resume connection has no seq", history);
  return seq!;
}

/**
 * The events a connection that stayed saw after `since`, each once: frames
 * with a new `seq` (a reply repeats the position of the last event it includes).
 */
function eventsSeen(
  frames: readonly ServerMessage[],
  conversationId: string,
  since: number,
): ServerMessage[] {
  let last = since;
  const events: ServerMessage[] = [];
  for (const m of frames) {
    const seq = seqOf(m);
    if (conversationOf(m) !== conversationId || seq === undefined || seq <= last) continue;
    last = seq;
    events.push(shared(m));
  }
  return events;
}

/**
 * Check a replay against what an observer saw: the same frames in the same
 * order, except that a message's superseded `message.delta`s may be left out
 * (collapsed into a later delta, or the `message.complete`, of that message),
 * and so may a thought's `thought.delta`s and a tool call's superseded
 * `tool.event`s (the replay log keeps a call's latest event).
 */
function checkReplay(replayed: readonly ServerMessage[], seen: readonly ServerMessage[]): void {
  let i = 0;
  for (const frame of replayed) {
    const json = JSON.stringify(frame);
    for (;;) {
      const expected = seen[i];
      if (expected === undefined)
        throw new CheckFailure("the replay has a frame the observer never saw", frame);
      i++;
      if (JSON.stringify(expected) === json) break;
      const collapsed =
        (expected.type === "message.delta" &&
          (frame.type === "message.delta" || frame.type === "message.complete") &&
          frame.message_id === expected.message_id) ||
        (expected.type === "thought.delta" &&
          (frame.type === "thought.delta" || frame.type === "thought.complete") &&
          frame.thought_id === expected.thought_id) ||
        (expected.type === "tool.event" &&
          frame.type === "tool.event" &&
          frame.tool_call_id === expected.tool_call_id);
      if (!collapsed)
        throw new CheckFailure(
          `the replay misses a ${expected.type} the observer saw, or has it out of order`,
          expected,
        );
    }
  }
  const missing = seen.slice(i).find((m) => m.type !== "message.delta" && m.type !== "thought.delta");
  if (missing) throw new CheckFailure(`the replay ends before a ${missing.type} the observer saw`, missing);
}

export const resumeChecks: Check[] = [
  {
    id: "extensions.resume_seq",
    section: SECTION,
    title:
      "resume: every conversation frame carries seq, growing; the snapshot carries the position; a v1 connection gets the same frames without seq, byte for byte",
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("resume", [FEATURE_RESUME]);
      const v1 = await ctx.connect("v1");
      const id = await ctx.createConversation(phone);
      const trace = await ctx.chat(phone, id, "/sim tools");
      await v1.waitFor((m) => m.type === "run.finished" && m.run_id === trace.runId, "run.finished on v1");
      const mine = (probe: Probe) =>
        probe.frames.filter((f) => conversationOf(f) === id && f.type !== "conversation.created");
      const phoneFrames = mine(phone);
      const v1Frames = mine(v1);
      let last = 0;
      for (const m of phone.frames.filter((f) => conversationOf(f) === id)) {
        const seq = seqOf(m);
        expect(Number.isInteger(seq), `${m.type} of a conversation has no seq on a resume connection`, m);
        expect(seq! >= last, `${m.type}'s seq goes back (${seq} after ${last})`, m);
        last = seq!;
      }
      expect((await position(phone, id)) === last, "conversation.history.seq is not the last event's seq");
      const stripped = phoneFrames.map((f) => JSON.stringify(shared(asV1(f))));
      const plain = v1Frames.map((f) => JSON.stringify(shared(f)));
      const differ = plain.findIndex((f, i) => f !== stripped[i]);
      if (differ >= 0 || plain.length !== stripped.length)
        throw new CheckFailure(
          "the v1 connection's frames differ from the resume connection's without seq",
          v1Frames[differ] ?? v1Frames.at(-1),
        );
    },
  },
  {
    id: "extensions.resume",
    section: SECTION,
    title:
      "resume: conversation.open { since_seq } after a drop answers conversation.resumed, then exactly what a connected observer saw meanwhile, in order, without its request_ids (superseded deltas and a tool call's superseded tool.events may be collapsed), then live events",
    needs: { simulator: true },
    async run(ctx) {
      const observer = await ctx.connectWith("observer", [FEATURE_RESUME]);
      const id = await ctx.createConversation(observer);
      const phone = await ctx.connectWith("phone", [FEATURE_RESUME]);
      const since = await position(phone, id);
      phone.close();
      await phone.closed;
      await ctx.chat(observer, id, "/sim tools");
      await observer.expectReply(
        { type: "conversation.rename", conversation_id: id, name: "resumed" },
        "conversation.renamed",
      );
      await observer.ping();
      const seen = eventsSeen(observer.frames, id, since);

      const back = await ctx.connectWith("back", [FEATURE_RESUME]);
      const reply = await open(back, id, since);
      if (reply.type !== "conversation.resumed")
        throw new CheckFailure("a since_seq the server just issued was not resumed", reply);
      expect(reply.from_seq === since, "conversation.resumed.from_seq does not echo since_seq", reply);
      expect(
        reply.to_seq === seqOf(seen.at(-1)!),
        "conversation.resumed.to_seq is not the last event's seq",
        reply,
      );
      await back.ping(); // the replay came before the pong
      const at = back.frames.indexOf(reply);
      const replayed = back.frames.slice(at + 1).filter((m) => conversationOf(m) === id);
      const carried = replayed.find((m) => (m as { request_id?: string }).request_id !== undefined);
      if (carried) throw new CheckFailure("a replayed frame carries a request_id", carried);
      checkReplay(replayed, seen);
      // Live events continue, after the replay.
      const live = await ctx.chat(observer, id, "after the resume");
      const accepted = await back.waitFor(
        (m) => m.type === "run.accepted" && m.run_id === live.runId,
        "the next run.accepted, live",
      );
      expect(seqOf(accepted)! > reply.to_seq, "a live event's seq is not above to_seq", accepted);
    },
  },
  {
    id: "extensions.resume_fallback",
    section: SECTION,
    title:
      "resume: a since_seq the server cannot replay from (here: one it never issued) gets the conversation.history snapshot with resumed: false and the current seq",
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("phone", [FEATURE_RESUME]);
      const id = await ctx.createConversation(phone);
      await ctx.chat(phone, id, "hello");
      const now = await position(phone, id);
      const reply = await open(phone, id, Number.MAX_SAFE_INTEGER);
      if (reply.type !== "conversation.history")
        throw new CheckFailure("a never-issued since_seq was resumed", reply);
      expect(reply.resumed === false, "the fallback snapshot does not say resumed: false", reply);
      expect(seqOf(reply) === now, "the fallback snapshot's seq is not the conversation's position", reply);
      expect(reply.messages.length === 2, "the fallback snapshot lacks the conversation's messages", reply);
    },
  },
  {
    id: "extensions.resume_idempotent",
    section: SECTION,
    title:
      "resume: a repeated client_message_id gets the first outcome, to the retrying connection only: conversation.create the same conversation, chat.send the same run.accepted (also after the run); history shows the user message's client_message_id",
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("phone", [FEATURE_RESUME]);
      const v1 = await ctx.connect("v1");
      const createId = `conformance-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      const create = { type: "conversation.create", name: "idempotent", client_message_id: createId };
      const first = await phone.expectReply(create, "conversation.created");
      const again = await phone.expectReply(create, "conversation.created");
      expect(
        again.conversation_id === first.conversation_id,
        "a repeated conversation.create made another",
        again,
      );
      const id = first.conversation_id;
      const send = {
        type: "chat.send",
        conversation_id: id,
        text: "exactly once",
        client_message_id: "send-1",
      };
      const accepted = await phone.expectReply(send, "run.accepted");
      const repeated = await phone.expectReply(send, "run.accepted");
      expect(repeated.run_id === accepted.run_id, "a repeated chat.send started another run", repeated);
      await phone.waitFor((m) => m.type === "run.finished" && m.run_id === accepted.run_id, "run.finished");
      const late = await phone.expectReply(send, "run.accepted");
      expect(late.run_id === accepted.run_id, "a chat.send repeated after its run started another", late);
      await v1.ping();
      const updates = v1.frames.filter((m) => m.type === "conversation.updated" && m.conversation_id === id);
      expect(
        updates.length === 1,
        `the other connection saw ${updates.length} conversation.updated`,
        updates[1],
      );
      const starts = v1.frames.filter((m) => m.type === "run.accepted" && m.conversation_id === id);
      expect(starts.length === 1, `the other connection saw ${starts.length} run.accepted`, starts[1]);
      const history = (await open(phone, id)) as ServerMessageOf<"conversation.history">;
      const users = history.messages.filter((m) => m.role === "user");
      expect(
        users.length === 1 && users[0]!.client_message_id === "send-1",
        "history does not show the one user message with its client_message_id",
        history,
      );
    },
  },
];
