// Agent modes and slash commands: listing, mode.set and who hears of it, errors, and the history's mode_id.
import { FEATURE_MODES } from "@pheby/protocol";
import { expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: modes and commands (`modes`)";

export const modeChecks: Check[] = [
  {
    id: "extensions.modes",
    section: SECTION,
    title:
      "modes: modes.list and commands.list answer their snapshots (auto_approves on every mode, current_mode_id one of them or null); mode.set of a mode that asks is answered mode.changed, the other modes connections get it without request_id, and it is the conversation's mode (modes.list, conversation.history.mode_id); an unknown mode_id is bad_request, an unknown conversation conversation_not_found; a connection without the feature gets unknown_type, none of its events and no mode_id",
    async run(ctx) {
      const plain = await ctx.connect("v1");
      const a = await ctx.connectWith("modes a", [FEATURE_MODES]);
      const b = await ctx.connectWith("modes b", [FEATURE_MODES]);
      const conversation = await ctx.createConversation(a, "conformance modes");
      await plain.expectError(
        { type: "modes.list", conversation_id: conversation },
        "unknown_type",
        "modes.list without the feature",
      );
      const listed = await a.expectReply(
        { type: "modes.list", conversation_id: conversation },
        "modes.snapshot",
      );
      const ids = listed.modes.map((m) => m.mode_id);
      expect(
        listed.conversation_id === conversation &&
          listed.modes.every((m) => typeof m.auto_approves === "boolean") &&
          (listed.current_mode_id === null || ids.includes(listed.current_mode_id)),
        "modes.snapshot is not the conversation's, or its current mode is not one of its modes",
        listed,
      );
      const commands = await a.expectReply(
        { type: "commands.list", conversation_id: conversation },
        "commands.snapshot",
      );
      expect(
        commands.conversation_id === conversation,
        "commands.snapshot is not the conversation's",
        commands,
      );
      await a.expectError(
        { type: "mode.set", conversation_id: conversation, mode_id: "conformance-no-such-mode" },
        "bad_request",
        "mode.set of a mode the agent does not offer",
      );
      await a.expectError(
        { type: "modes.list", conversation_id: "conformance-no-such-conversation" },
        "conversation_not_found",
        "modes.list of an unknown conversation",
      );
      // A mode that asks, other than the current one when there is a choice (the agent may have none).
      const asking = listed.modes.filter((m) => !m.auto_approves).map((m) => m.mode_id);
      const target = asking.find((id) => id !== listed.current_mode_id) ?? asking[0];
      if (target === undefined) {
        await plain.ping();
        expect(!plain.frames.some((m) => m.type === "mode.changed"), "a v1 connection got mode.changed");
        return;
      }
      const changed = await a.expectReply(
        { type: "mode.set", conversation_id: conversation, mode_id: target },
        "mode.changed",
      );
      expect(
        changed.conversation_id === conversation && changed.mode_id === target,
        "mode.changed does not name the conversation and the mode set",
        changed,
      );
      const heard = await b.waitFor(
        (m) => m.type === "mode.changed" && m.conversation_id === conversation && m.mode_id === target,
        "mode.changed on the other modes connection",
      );
      expect(
        heard.request_id === undefined,
        "the other connection's mode.changed carries a request_id",
        heard,
      );
      const after = await a.expectReply(
        { type: "modes.list", conversation_id: conversation },
        "modes.snapshot",
      );
      expect(after.current_mode_id === target, "modes.list does not show the mode set", after);
      const history = await b.expectReply(
        { type: "conversation.open", conversation_id: conversation },
        "conversation.history",
      );
      expect(history.mode_id === target, "conversation.history.mode_id is not the mode set", history);
      const v1History = await plain.expectReply(
        { type: "conversation.open", conversation_id: conversation },
        "conversation.history",
      );
      expect(!("mode_id" in v1History), "a v1 connection's conversation.history carries mode_id", v1History);
      expect(!plain.frames.some((m) => m.type === "mode.changed"), "a v1 connection got mode.changed");
    },
  },
];
