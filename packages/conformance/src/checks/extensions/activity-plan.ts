import { FEATURE_ACTIVITY, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

const SECTION = "Extension: the agent's work (`activity`)";

type Plan = ServerMessageOf<"plan.updated">;
type Usage = ServerMessageOf<"usage.updated">;

const ofConversation = (id: string) => (m: ServerMessage) =>
  (m as { conversation_id?: string }).conversation_id === id;

export const activityPlanChecks: Check[] = [
  {
    id: "extensions.activity_plan",
    section: SECTION,
    title:
      "activity: the agent's plan arrives as plan.updated of its run, each whole, and advances to completed; usage.updated follows the turn; conversation.history carries the latest plan and usage; a v1 connection gets none of it",
    needs: { simulator: true },
    async run(ctx) {
      const phone = await ctx.connectWith("activity", [FEATURE_ACTIVITY]);
      const v1 = await ctx.connect("v1");
      const id = await ctx.createConversation(phone);
      const fresh = (await phone.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(
        fresh.plan === null && fresh.usage === null,
        "a new conversation's history does not carry plan: null and usage: null",
        fresh,
      );
      const start = phone.frames.length;
      const trace = await ctx.chat(phone, id, "/sim plan");
      const plans = trace.frames.filter((m): m is Plan => m.type === "plan.updated");
      if (plans.length < 2)
        throw new CheckFailure("/sim plan sent fewer than two plan.updated", trace.finished);
      for (const plan of plans) {
        expect(plan.run_id === trace.runId, "a plan.updated during a run names another run", plan);
        expect(
          plan.entries.length === plans[0]!.entries.length,
          "a plan.updated is not the whole plan (its entries changed in number)",
          plan,
        );
      }
      const last = plans.at(-1)!;
      expect(
        last.entries.every((e) => e.status === "completed"),
        "/sim plan's last plan is not all completed",
        last,
      );
      expect(
        plans.some((p) => p.entries.some((e) => e.status === "in_progress")),
        "/sim plan's plan never had a step in progress",
        plans,
      );
      const usage = (await phone.waitFor(
        (m) => m.type === "usage.updated" && ofConversation(id)(m),
        "usage.updated after the turn",
        { from: start },
      )) as Usage;
      expect(usage.size > 0 && usage.used <= usage.size, "usage.updated's used and size do not fit", usage);
      const history = (await phone.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(
        JSON.stringify(history.plan) === JSON.stringify(last.entries),
        "conversation.history's plan is not the latest plan.updated's entries",
        history,
      );
      const latest = phone.frames
        .filter((m): m is Usage => m.type === "usage.updated" && ofConversation(id)(m))
        .at(-1)!;
      expect(
        JSON.stringify(history.usage) ===
          JSON.stringify({ used: latest.used, size: latest.size, cost: latest.cost }),
        "conversation.history's usage is not the latest usage.updated",
        history,
      );
      await v1.waitFor((m) => m.type === "run.finished" && m.run_id === trace.runId, "run.finished on v1");
      const leak = v1.frames.find((m) => m.type === "plan.updated" || m.type === "usage.updated");
      if (leak) throw new CheckFailure("a connection without activity got a plan or usage", leak);
      const plain = (await v1.expectReply(
        { type: "conversation.open", conversation_id: id },
        "conversation.history",
      )) as ServerMessageOf<"conversation.history">;
      expect(!("plan" in plain) && !("usage" in plain), "a v1 history carries plan or usage", plain);
    },
  },
];
