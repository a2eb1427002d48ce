import { applyDelta, FEATURE_DELTA_APPEND, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import { expectFinished, runFrames } from "../context.js";
import { CheckFailure, expect } from "../failure.js";
import type { Check } from "../types.js";
import { checkLifecycle } from "./runs.js";

type Delta = ServerMessageOf<"message.delta">;

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The message.delta frames of one run's draft, in order. */
function deltasOf(frames: readonly ServerMessage[], runId: string): Delta[] {
  return runFrames([...frames], runId).filter((m): m is Delta => m.type === "message.delta");
}

export const extensionChecks: Check[] = [
  {
    id: "extensions.delta_append",
    section: "Pheby extensions (hello.features)",
    title:
      "delta.append: a connection that asks gets offset deltas that stitch to the cumulative deltas a v1 connection gets for the same run, step by step; one that does not ask gets v1 (no offset, no ready.features); unknown features are ignored",
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
        appended.length === cumulative.length,
        `the delta.append connection got ${appended.length} deltas, the v1 connection ${cumulative.length}`,
        appended.at(-1),
      );
      let draft = "";
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
        if (draft !== cumulative[i]!.text)
          throw new CheckFailure(
            `the stitched draft after delta ${i + 1} differs from the v1 connection's`,
            d,
          );
      }
      const complete = runFrames(append.frames, trace.runId).find((m) => m.type === "message.complete");
      expect(
        complete?.type === "message.complete" && complete.text === final,
        "message.complete differs between the two connections",
        complete,
      );
      expect(
        final.startsWith(draft),
        "the stitched draft is not a prefix of message.complete's text",
        appended.at(-1),
      );
    },
  },
];
