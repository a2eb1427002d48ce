import { z } from "zod/v3";
import { boundedBytes, conversationEvent, OpaqueId, request } from "../common.js";
import { CHANGE_STATUSES, CHANGED_FILE_TYPES, LIMITS } from "../constants.js";

// The `changes` extension (FEATURE_CHANGES): what a conversation changed in its git repository, file by
// file, against the commit that was HEAD when it was created. Read-only. Clients never name a path:
// files are addressed by the IDs the server hands out, and paths are relative to the conversation's
// path base (docs/security.md).

/** `changes`: a changed file's ID, derived from the base and the path; valid while that file differs from the base. */
export const ChangedFileId = z
  .string()
  .min(1)
  .max(LIMITS.changesFileIdChars)
  .describe("A changed file's ID (1..64 characters), valid while the file differs from the base");

const count = z.number().int().nonnegative();

/** `changes`: the commit a conversation's changes are measured against. */
export const ChangesBase = z
  .object({
    commit: z
      .string()
      .regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, "must be a full commit hash (40 or 64 lowercase hex)")
      .describe(
        "The full hash of the commit that was HEAD when the conversation was created (a worktree's branch point)",
      ),
    label: z.string().describe("A short form for display, e.g. the abbreviated hash"),
  })
  .describe("The commit the changes are measured against");

/** `changes`: one path that differs between the base and the working tree. */
export const ChangedFile = z
  .object({
    file_id: ChangedFileId,
    path: z.string().describe("Relative to the conversation's path base, /-separated, no .."),
    old_path: z.string().optional().describe("Only for a rename: the path in the base"),
    status: z.enum(CHANGE_STATUSES),
    type: z
      .enum(CHANGED_FILE_TYPES)
      .describe("What the path is in the working tree (in the base when deleted)"),
    additions: count.describe("Lines added (0 for a binary file)"),
    deletions: count.describe("Lines removed (0 for a binary file)"),
    binary: z.boolean(),
  })
  .describe("A file that differs from the base");

/** `changes.list`: the files a conversation changed against its base. */
export const ChangesList = request(
  "changes.list",
  { conversation_id: OpaqueId },
  "List what a conversation changed",
);

/** `changes.snapshot`: reply to `changes.list` (requester only). */
export const ChangesSnapshot = conversationEvent(
  "changes.snapshot",
  {
    conversation_id: z.string(),
    base: ChangesBase,
    files: z
      .array(ChangedFile)
      .max(LIMITS.changesFiles)
      .describe("Every path that differs from the base, untracked files included, ignored ones not"),
    truncated: z.boolean().describe("true when more than 1,000 files differ and the rest are left out"),
  },
  "What a conversation changed",
);

/** `changes.diff`: one changed file's patch. */
export const ChangesDiff = request(
  "changes.diff",
  { conversation_id: OpaqueId, file_id: ChangedFileId },
  "Read one changed file's patch",
);

/** `changes.file`: reply to `changes.diff` (requester only). */
export const ChangesFile = conversationEvent(
  "changes.file",
  {
    conversation_id: z.string(),
    file_id: z.string(),
    path: z.string().describe("Relative to the conversation's path base"),
    patch: boundedBytes(LIMITS.changesPatchBytes)
      .nullable()
      .describe(
        "The unified diff against the base (3 lines of context, at most 256 KiB of UTF-8); null for a binary file",
      ),
    truncated: z.boolean().describe("true when the patch was cut at 256 KiB"),
  },
  "One changed file's patch",
);

/**
 * `changes.changed`: at the end of a run whose changes differ from what they were before, to every
 * `changes` connection (totals against the base). Carries `seq` on `resume` connections and is in the
 * replay log.
 */
export const ChangesChanged = conversationEvent(
  "changes.changed",
  {
    conversation_id: z.string(),
    run_id: z.string().describe("The run at whose end the changes were measured"),
    file_count: count.describe("How many files differ from the base (all of them, also past 1,000)"),
    additions: count,
    deletions: count,
  },
  "A conversation's changes moved",
);

/** Parsed form of {@link ChangedFile}. */
export type ChangedFile = z.infer<typeof ChangedFile>;
/** Parsed form of {@link ChangesBase}. */
export type ChangesBase = z.infer<typeof ChangesBase>;
