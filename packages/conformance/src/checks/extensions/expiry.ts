// Expiring questions: expires_at, the withdrawal when it passes and the notice.
import { FEATURE_EXPIRY } from "@pheby/protocol";
import { expectFinished } from "../../context.js";
import { expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: expiring questions (`expiry`)";

export const expiryChecks: Check[] = [
  {
    id: "extensions.expiry",
    section: SECTION,
    title:
      "expiry: a question the agent gives up on (/sim timeout) carries expires_at on an expiry connection, is withdrawn when it passes, and a notice says it expired; a v1 connection gets neither",
    needs: { simulator: true },
    async run(ctx) {
      const plain = await ctx.connect("v1");
      const probe = await ctx.connectWith("expiry", [FEATURE_EXPIRY]);
      const conversation = await ctx.createConversation(probe, "conformance expiry");
      const trace = await ctx.chat(probe, conversation, "/sim timeout", { timeoutMs: 60_000 });
      expectFinished(trace, "completed");
      const asked = probe.frames.find((m) => m.type === "approval.request" && m.run_id === trace.runId);
      expect(
        asked?.type === "approval.request" &&
          typeof asked.expires_at === "string" &&
          Date.parse(asked.expires_at) > Date.parse(asked.ts),
        "approval.request of /sim timeout carries no expires_at after its ts",
        asked,
      );
      // Withdrawn: failed closed, as if denied, without anyone answering it.
      const withdrawn = await probe.waitFor(
        (m) => m.type === "approval.resolved" && m.approval_id === asked.approval_id,
        "approval.resolved withdrawing the expired approval",
      );
      expect(
        withdrawn.type === "approval.resolved" && !withdrawn.accepted,
        "the expired approval was resolved as accepted",
        withdrawn,
      );
      // The notice follows the withdrawal, in the question's conversation.
      await probe.waitFor(
        (m) => m.type === "message.complete" && m.kind === "notice" && m.conversation_id === conversation,
        "notice in the conversation, after the withdrawal, that the approval expired",
        { from: probe.frames.indexOf(withdrawn) + 1 },
      );
      await plain.ping();
      const v1Notice = plain.frames.find(
        (m) => m.type === "message.complete" && m.kind === "notice" && m.conversation_id === conversation,
      );
      expect(v1Notice === undefined, "a v1 connection got the expiry notice", v1Notice);
    },
  },
];
