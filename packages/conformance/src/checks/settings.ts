import { expect } from "../failure.js";
import type { Check } from "../types.js";
import { UNKNOWN_ID } from "./errors.js";

export const settingsChecks: Check[] = [
  {
    id: "yolo.roundtrip",
    section: "Auto-approve (YOLO)",
    title:
      "yolo.current/yolo.set are conversation-scoped; yolo.changed is the reply and a broadcast without request_id",
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const conversation_id = await ctx.createConversation(a);
      const before = await a.expectReply({ type: "yolo.current", conversation_id }, "yolo.snapshot");
      expect(
        before.enabled === false && before.conversation_id === conversation_id,
        "a new conversation has YOLO on",
        before,
      );
      const from = b.frames.length;
      const changed = await a.expectReply(
        { type: "yolo.set", conversation_id, enabled: true },
        "yolo.changed",
      );
      expect(
        changed.enabled && changed.conversation_id === conversation_id,
        "yolo.changed does not say enabled",
        changed,
      );
      const seen = await b.waitFor(
        (m) => m.type === "yolo.changed" && m.conversation_id === conversation_id,
        "yolo.changed broadcast",
        { from },
      );
      expect(
        (seen as { request_id?: string }).request_id === undefined,
        "the broadcast carries a request_id",
        seen,
      );
      const after = await b.expectReply({ type: "yolo.current", conversation_id }, "yolo.snapshot");
      expect(after.enabled, "yolo.current does not reflect yolo.set", after);
      await a.expectReply({ type: "yolo.set", conversation_id, enabled: false }, "yolo.changed");
      await a.expectError(
        { type: "yolo.current", conversation_id: UNKNOWN_ID },
        "conversation_not_found",
        "yolo.current of an unknown conversation",
      );
    },
  },
  {
    id: "models.scopes",
    section: "Models",
    title:
      "models.list (efforts without none, as the spec's example), then model.set with conversation_id is a conversation override (reply + broadcast); unknown models get bad_request",
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const conversation_id = await ctx.createConversation(a);
      const list = await ctx.unlessNotImplemented(
        a.expectReply({ type: "models.list", conversation_id }, "models.snapshot"),
      );
      const models = list.providers.flatMap((p) => p.models.map((model) => ({ model, provider: p.slug })));
      expect(models.length > 0, "models.snapshot lists no models", list);
      // The spec's example lists the levels only: none is "thinking off", not a level.
      expect(
        !list.supported_reasoning_efforts.includes("none"),
        'supported_reasoning_efforts lists "none"',
        list,
      );
      const pick = models.find((m) => m.model !== list.current_model) ?? models[0]!;
      const globalBefore = await a.expectReply({ type: "models.current" }, "model.current");
      const from = b.frames.length;
      const changed = await a.expectReply(
        { type: "model.set", conversation_id, model: pick.model, provider: pick.provider },
        "model.changed",
      );
      expect(
        changed.model === pick.model && changed.scope === "conversation",
        "model.changed is not the conversation override",
        changed,
      );
      await b.waitFor(
        (m) => m.type === "model.changed" && (m as { request_id?: string }).request_id === undefined,
        "model.changed broadcast",
        { from },
      );
      const current = await a.expectReply({ type: "models.current", conversation_id }, "model.current");
      expect(
        current.model === pick.model && current.scope === "conversation",
        "models.current does not reflect the override",
        current,
      );
      const globalAfter = await a.expectReply({ type: "models.current" }, "model.current");
      expect(
        globalAfter.model === globalBefore.model,
        "a conversation override changed the global model",
        globalAfter,
      );
      await a.expectError(
        { type: "model.set", conversation_id, model: "conformance/no-such-model" },
        "bad_request",
        "an unknown model",
      );
    },
  },
  {
    id: "reasoning.scopes",
    section: "Reasoning effort",
    title:
      "reasoning.set with conversation_id is a conversation override; none disables thinking; invalid efforts get bad_request",
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      await ctx.unlessNotImplemented(
        probe.expectReply({ type: "reasoning.current", conversation_id }, "reasoning.snapshot"),
      );
      const changed = await probe.expectReply(
        { type: "reasoning.set", conversation_id, effort: "high" },
        "reasoning.changed",
      );
      expect(
        changed.effort === "high" && changed.scope === "conversation",
        "reasoning.changed is not the override",
        changed,
      );
      const current = await probe.expectReply(
        { type: "reasoning.current", conversation_id },
        "reasoning.snapshot",
      );
      expect(
        current.effort === "high" && current.enabled,
        "reasoning.current does not reflect the override",
        current,
      );
      await probe.expectReply(
        { type: "reasoning.set", conversation_id, effort: "none" },
        "reasoning.changed",
      );
      const off = await probe.expectReply(
        { type: "reasoning.current", conversation_id },
        "reasoning.snapshot",
      );
      expect(!off.enabled, 'effort "none" does not disable thinking', off);
      await probe.expectError(
        { type: "reasoning.set", conversation_id, effort: "turbo" },
        "bad_request",
        'effort "turbo"',
      );
    },
  },
];
