// Append deltas: the offset deltas of an asking connection stitch to what a v1 connection gets.
import { applyDelta, FEATURE_DELTA_APPEND, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import { answerOf, runFrames } from "@pheby/testkit";
import { expectFinished } from "../../context.js";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";
import { checkLifecycle } from "../runs.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: append deltas (`delta.append`)";

type Delta = ServerMessageOf<"message.delta">;

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The message.delta frames of one run's draft, in order. */
function deltasOf(frames: readonly ServerMessage[], runId: string): Delta[] {
  return runFrames(frames, runId).filter((m): m is Delta => m.type === "message.delta");
}

export const deltaAppendChecks: Check[] = [
  {
    id: "extensions.delta_append",
    section: SECTION,
    title:
      "delta.append: a connection that asks gets offset deltas that stitch, step by step, to drafts that include every cumulative delta a v1 connection gets for the same run (in order; a v1 connection may get fewer of a long answer); one that does not ask gets v1 (no offset, no ready.features); unknown features are ignored",
    needs: { simulator: true },
    async run(ctx) {
      const plain = await ctx.raw("v1");
      const plainReady = await plain.hello(ctx.options.secret);
      expect(
        plainReady.features === undefined,
        "ready carries features although hello asked for none",
        plainReady,
      );
      const append = await ctx.raw("append");
      const asked = [FEATURE_DELTA_APPEND, "x-conformance-unknown-feature"];
      const ready = await append.hello(ctx.options.secret, asked);
      const enabled = ready.features ?? [];
      if (!enabled.includes(FEATURE_DELTA_APPEND))
        ctx.skip("the server does not offer delta.append (a v1 server may ignore hello.features)");
      expect(
        enabled.every((f) => f === FEATURE_DELTA_APPEND),
        "ready.features enables a feature the client did not ask for, or an unknown one",
        ready,
      );
      // Past 32 KiB, in several chunks: offsets well beyond deflate's window.
      const trace = await ctx.chat(plain, await ctx.createConversation(plain), "/sim long 70000");
      expectFinished(trace, "completed");
      const final = checkLifecycle(trace);
      await append.waitFor(
        (m) => m.type === "run.finished" && m.run_id === trace.runId,
        "run.finished on the delta.append connection",
      );
      const cumulative = deltasOf(trace.frames, trace.runId);
      const offered = cumulative.find((d) => d.offset !== undefined);
      if (offered)
        throw new CheckFailure("a connection that did not ask for delta.append got an offset", offered);
      const appended = deltasOf(append.frames, trace.runId);
      expect(
        appended.length >= cumulative.length,
        `the delta.append connection got ${appended.length} deltas, the v1 connection ${cumulative.length}`,
        appended.at(-1),
      );
      let draft = "";
      /** Index in `cumulative` of the next v1 delta to find among the stitched drafts. */
      let next = 0;
      for (const [i, d] of appended.entries()) {
        if (d.offset === undefined)
          throw new CheckFailure("a delta.append connection got a delta without offset", d);
        if (i === 0 && d.offset !== 0)
          throw new CheckFailure("the first delta of a message does not have offset 0", d);
        if (d.offset > draft.length)
          throw new CheckFailure(`offset ${d.offset} is beyond the draft (${draft.length})`, d);
        if (d.offset > 0 && isLowSurrogate(d.text.charCodeAt(0)))
          throw new CheckFailure("a delta starts inside a surrogate pair", d);
        draft = applyDelta(draft, d);
        if (!final.startsWith(draft))
          throw new CheckFailure(
            `the stitched draft after delta ${i + 1} is not a prefix of message.complete's text`,
            d,
          );
        // A server may send a v1 connection fewer deltas of a long answer, never other ones.
        if (draft === cumulative[next]?.text) next++;
      }
      if (next < cumulative.length)
        throw new CheckFailure(
          `the v1 connection's delta ${next + 1} is no stitched draft of the delta.append connection (after one of its deltas, in order)`,
          cumulative[next],
        );
      const complete = answerOf(append.frames, trace.runId);
      expect(
        complete?.type === "message.complete" && complete.text === final,
        "message.complete differs between the two connections",
        complete,
      );
    },
  },
];
