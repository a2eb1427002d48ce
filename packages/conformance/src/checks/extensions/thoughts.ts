import { applyDelta, FEATURE_THOUGHTS, type ServerMessageOf } from "@pheby/protocol";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

const SECTION = "Extension: thinking (`thoughts`)";

type Delta = ServerMessageOf<"thought.delta">;
type Complete = ServerMessageOf<"thought.complete">;

export const thoughtsChecks: Check[] = [
  {
    id: "extensions.thoughts",
    section: SECTION,
    title:
      "thoughts: the agent's thinking streams as thought.delta append deltas (the first offset 0) that stitch with applyDelta, ends with thought.complete before the answer, history lists no thoughts once the run ended, and a v1 connection gets none of it",
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("thoughts", [FEATURE_THOUGHTS]);
      const v1 = await ctx.connect("v1");
      const id = await ctx.createConversation(phone);
      const trace = await ctx.chat(phone, id, "/sim think");
      const deltas = trace.frames.filter((m): m is Delta => m.type === "thought.delta");
      const completes = trace.frames.filter((m): m is Complete => m.type === "thought.complete");
      if (deltas.length === 0) throw new CheckFailure("/sim think sent no thought.delta", trace.finished);
      expect(
        completes.length === 1,
        "/sim think did not end its thought with one thought.complete",
        completes,
      );
      const complete = completes[0]!;
      expect(
        deltas[0]!.offset === 0,
        "the first thought.delta of a thought has an offset other than 0",
        deltas[0],
      );
      let thought = "";
      for (const d of deltas) {
        expect(d.thought_id === complete.thought_id, "a thought.delta names another thought", d);
        expect(d.run_id === trace.runId, "a thought.delta names another run", d);
        try {
          thought = applyDelta(thought, d);
        } catch {
          throw new CheckFailure("a thought.delta's offset lies beyond the thought so far", d);
        }
        expect(
          complete.text.startsWith(thought),
          "the stitched thought is not a prefix of thought.complete",
          d,
        );
      }
      expect(complete.text.trim().length > 0, "thought.complete carries no text", complete);
      const types = trace.frames.map((m) => m.type);
      const answer = types.indexOf("message.delta");
      expect(
        answer === -1 || types.indexOf("thought.complete") < answer,
        "thought.complete came after the answer's first message.delta",
        trace.frames[answer],
      );
      const answerText = trace.frames.find((m) => m.type === "message.complete");
      expect(
        !JSON.stringify(answerText).includes(complete.text),
        "the thought is part of the answer's text",
        answerText,
      );
      const history = (await phone.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(
        Array.isArray(history.thoughts) && history.thoughts.length === 0,
        "conversation.history of a thoughts connection without an active run does not carry thoughts: []",
        history,
      );
      await v1.waitFor((m) => m.type === "run.finished" && m.run_id === trace.runId, "run.finished on v1");
      const leak = v1.frames.find((m) => m.type === "thought.delta" || m.type === "thought.complete");
      if (leak) throw new CheckFailure("a connection without thoughts got a thought", leak);
      const plain = (await v1.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(!("thoughts" in plain), "conversation.history of a v1 connection carries thoughts", plain);
    },
  },
];
