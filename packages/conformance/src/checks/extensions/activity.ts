// The agent's work: tool detail (a diff behind an approval), tool.get, and none of it on v1.
import { FEATURE_ACTIVITY, type ServerMessageOf } from "@pheby/protocol";
import { expectFinished } from "../../context.js";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: the agent's work (`activity`)";

/** The fields `activity` adds to a tool event and to an approval. */
const TOOL_FIELDS = ["kind", "title", "locations", "content"] as const;
const APPROVAL_FIELDS = ["tool_call_id", "preview"] as const;

export const activityChecks: Check[] = [
  {
    id: "extensions.activity",
    section: SECTION,
    title:
      "activity: /sim diff's edit carries its kind, title, relative location and a unified diff, and its approval names the call and previews the diff; tool.get answers with the call's latest state and detail (not_found for an unknown call); a v1 connection gets none of these fields, and tool.get is unknown_type to it",
    needs: { simulator: true },
    async run(ctx) {
      const plain = await ctx.connect("v1");
      const probe = await ctx.connectWith("activity", [FEATURE_ACTIVITY]);
      const conversation = await ctx.createConversation(probe, "conformance activity");
      let asked: ServerMessageOf<"approval.request"> | undefined;
      const trace = await ctx.chat(probe, conversation, "/sim diff", {
        onAccepted: async (runId) => {
          asked = (await probe.waitFor(
            (m) => m.type === "approval.request" && m.run_id === runId,
            "approval.request of /sim diff",
          )) as ServerMessageOf<"approval.request">;
          probe.send({ type: "approval.respond", approval_id: asked.approval_id, choice: "once" });
        },
      });
      expectFinished(trace, "completed");
      const tools = trace.frames.filter((m): m is ServerMessageOf<"tool.event"> => m.type === "tool.event");
      const edit = tools.find((t) => t.content !== undefined);
      if (!edit) throw new CheckFailure("no tool.event of /sim diff carries content", tools);
      const diff = edit.content?.find((b) => b.type === "diff");
      expect(
        edit.kind === "edit" && typeof edit.title === "string" && edit.locations?.[0]?.outside === false,
        "the edit's tool.event lacks kind edit, a title or an inside location",
        edit,
      );
      expect(
        diff?.type === "diff" &&
          diff.path !== null &&
          !diff.path.startsWith("/") &&
          !diff.path.split("/").includes("..") &&
          diff.patch.includes(`+++ ${diff.path}\n`) &&
          /\n@@ -\d+(,\d+)? \+\d+(,\d+)? @@/.test(diff.patch) &&
          diff.additions > 0 &&
          diff.deletions > 0,
        "the edit's diff block is not a unified diff of a relative path with its counts",
        diff,
      );
      expect(
        asked?.tool_call_id === edit.tool_call_id &&
          JSON.stringify(asked.preview) === JSON.stringify(edit.content),
        "the approval does not name the edit's call or preview its diff",
        asked,
      );
      const got = await probe.expectReply(
        { type: "tool.get", conversation_id: conversation, tool_call_id: edit.tool_call_id },
        "tool.event",
      );
      expect(
        got.status === "completed" &&
          got.tool_call_id === edit.tool_call_id &&
          JSON.stringify(got.content) === JSON.stringify(edit.content),
        "tool.get did not answer with the call's latest state and its content",
        got,
      );
      const unknown = await probe.request(
        { type: "tool.get", conversation_id: conversation, tool_call_id: "conformance-no-such-call" },
        "tool.event",
      );
      expect(
        unknown.type === "error" && unknown.error.code === "not_found",
        "tool.get of an unknown call is not not_found",
        unknown,
      );
      // v1: the same events, none of the fields; the request does not exist.
      await plain.ping();
      for (const frame of plain.frames) {
        const added =
          frame.type === "tool.event"
            ? TOOL_FIELDS
            : frame.type === "approval.request"
              ? APPROVAL_FIELDS
              : [];
        for (const field of added)
          expect(!(field in frame), `a v1 connection got ${frame.type}.${field}`, frame);
      }
      const v1Get = await plain.request({
        type: "tool.get",
        conversation_id: conversation,
        tool_call_id: edit.tool_call_id,
      });
      expect(
        v1Get.type === "error" && v1Get.error.code === "unknown_type",
        "tool.get on a v1 connection is not unknown_type",
        v1Get,
      );
    },
  },
];
