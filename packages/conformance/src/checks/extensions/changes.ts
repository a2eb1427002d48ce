// What a conversation changed: changes.list / changes.diff against its base commit, changes.changed
// at the end of a run that moved the changes, and none of it on v1.
import { FEATURE_CHANGES, type ServerMessage, type ServerMessageOf } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { expectFinished } from "../../context.js";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: what a conversation changed (`changes`)";

/** What `/sim changes` leaves in the simulator's repository (docs/simulator.md): path, status, +, −. */
const SIM_FILES = [
  ["docs/old-notes.md", "deleted", 0, 1],
  ["src/app.ts", "modified", 2, 1],
  ["src/feature.ts", "added", 3, 0],
] as const;

type Snapshot = ServerMessageOf<"changes.snapshot">;

/** `changes.list`'s answer: the snapshot, or the error (not_implemented outside a git repository). */
async function list(probe: Probe, conversation_id: string): Promise<Snapshot | ServerMessageOf<"error">> {
  return probe.request({ type: "changes.list", conversation_id }, "changes.snapshot");
}

/** A snapshot's paths are relative to the path base: no leading `/`, no `..`, and its base a full hash. */
function expectWellFormed(snapshot: Snapshot): void {
  expect(
    /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(snapshot.base.commit),
    "base.commit is not a full hash",
    snapshot,
  );
  for (const file of snapshot.files) {
    for (const path of [file.path, file.old_path].filter((p): p is string => p !== undefined))
      expect(
        !path.startsWith("/") && !path.split("/").includes(".."),
        `changes.snapshot names a path that is not relative to the path base: ${path}`,
        snapshot,
      );
    expect((file.old_path !== undefined) === (file.status === "renamed"), "old_path without a rename", file);
  }
}

export const changesChecks: Check[] = [
  {
    id: "extensions.changes",
    section: SECTION,
    title:
      "changes: changes.list answers changes.snapshot (paths relative to the path base, a full base commit), or not_implemented naming git when the working directory is not in a git repository; with the simulator, /sim changes then sends changes.changed for its run and the list and a diff show its three files; an unknown file_id is not_found; a v1 connection gets unknown_type and no changes frames",
    async run(ctx) {
      const v1 = await ctx.connect("v1");
      const probe = await ctx.connectWith("changes", [FEATURE_CHANGES]);
      const conversation = await ctx.createConversation(probe, "conformance changes");
      await v1.expectError(
        { type: "changes.list", conversation_id: conversation },
        "unknown_type",
        "v1 list",
      );

      const first = await list(probe, conversation);
      if (first.type === "error") {
        expect(
          first.error.code === "not_implemented" && /git/i.test(first.error.message),
          "changes.list outside a git repository is not not_implemented with a message naming git",
          first,
        );
      } else expectWellFormed(first);
      await probe.expectError(
        { type: "changes.diff", conversation_id: conversation, file_id: "conformance-no-such-file" },
        first.type === "error" ? "not_implemented" : "not_found",
        "changes.diff of an unknown file",
      );
      if (ctx.options.simulator === false) return;

      // The simulator's own repository: /sim changes edits, creates and deletes a file there.
      const trace = await ctx.chat(probe, conversation, "/sim changes");
      expectFinished(trace, "completed");
      const changed = (await probe.waitFor(
        (m) => m.type === "changes.changed" && m.run_id === trace.runId,
        "changes.changed of /sim changes",
      )) as ServerMessageOf<"changes.changed">;
      expect(
        changed.conversation_id === conversation && changed.file_count >= SIM_FILES.length,
        "changes.changed does not name the conversation and its three files",
        changed,
      );
      const after = await list(probe, conversation);
      if (after.type === "error") throw new CheckFailure("changes.list after /sim changes failed", after);
      expectWellFormed(after);
      for (const [path, status, additions, deletions] of SIM_FILES) {
        const file = after.files.find((f) => f.path === path);
        expect(
          file?.status === status &&
            file.additions === additions &&
            file.deletions === deletions &&
            !file.binary,
          `changes.snapshot does not list ${path} as ${status} +${additions} −${deletions}`,
          after,
        );
      }
      const feature = after.files.find((f) => f.path === "src/feature.ts")!;
      const diff = await probe.expectReply(
        { type: "changes.diff", conversation_id: conversation, file_id: feature.file_id },
        "changes.file",
      );
      expect(
        diff.path === "src/feature.ts" &&
          diff.truncated === false &&
          typeof diff.patch === "string" &&
          diff.patch.includes("+export function feature() {"),
        "changes.file of src/feature.ts is not its patch",
        diff,
      );
      await probe.expectError(
        { type: "changes.diff", conversation_id: conversation, file_id: "conformance-no-such-file" },
        "not_found",
        "changes.diff of an unknown file",
      );
      await v1.ping();
      const leaked = v1.frames.find((f: ServerMessage) => f.type.startsWith("changes."));
      expect(leaked === undefined, "a v1 connection got a changes frame", leaked);
    },
  },
];
