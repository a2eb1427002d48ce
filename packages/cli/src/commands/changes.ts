import type { ChangedFile, PhebyClient } from "@pheby/client";
import { FEATURE_CHANGES } from "@pheby/protocol";
import { formatPatch, safe, useColor } from "../activity.js";
import { type Command, EXIT, required } from "../command.js";
import { requireFeature } from "../features.js";
import { type Io, note, writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

// git's name-status letters; a status this CLI does not know (a newer server's) shows as M.
const LETTERS: Record<string, string> = {
  added: "A",
  modified: "M",
  deleted: "D",
  renamed: "R",
  type_changed: "T",
};

/** One line of the file list: status letter, +/- counts (or `binary`), path (`old -> new` for a rename). */
export function changedFileLine(file: ChangedFile): string {
  const counts = file.binary
    ? "binary".padEnd(13)
    : `+${file.additions}`.padEnd(6) + ` -${file.deletions}`.padEnd(7);
  const path = file.old_path === undefined ? safe(file.path) : `${safe(file.old_path)} -> ${safe(file.path)}`;
  const kind = file.type === "file" ? "" : `  (${safe(file.type)})`;
  return `${LETTERS[file.status] ?? "M"}  ${counts}  ${path}${kind}`;
}

/** The file a command-line argument names: a path as listed (new or old), else a file_id. */
export function findChangedFile(files: readonly ChangedFile[], arg: string): ChangedFile | undefined {
  return (
    files.find((f) => f.path === arg) ??
    files.find((f) => f.old_path === arg) ??
    files.find((f) => f.file_id === arg)
  );
}

/** Print one file's patch (colored on a terminal), or its `changes.file` as JSON. */
async function printPatch(
  client: PhebyClient,
  io: Io,
  conversationId: string,
  fileId: string,
  json: boolean,
) {
  const diff = await client.diffChange(conversationId, fileId);
  if (json) {
    const { type: _t, request_id: _r, seq: _s, ...body } = diff;
    writeJson(io, body);
  } else if (diff.patch === null) writeLine(io, `Binary file ${safe(diff.path)}: no patch.`);
  else for (const line of formatPatch(diff.patch, useColor(io))) writeLine(io, line);
  if (diff.truncated) note(io, "(the patch is cut at 256 KiB)");
}

export const changes: Command = {
  name: "changes",
  usage: "<conversation> [file]",
  summary:
    "What a conversation changed in its git repository against the commit it started from (changes extension): each file with its status (A added, M modified, D deleted, R renamed, T type changed) and +/- line counts; with [file] (a path as listed, or a file_id) that file's patch.",
  details: [
    "  Without a worktree the list is of the working tree the conversation shares, so it includes",
    "  changes others made in that directory. --json: the list as one object { base, files, truncated },",
    "  or the file as { conversation_id, file_id, path, patch, truncated }.",
  ],
  examples: [
    'pheby changes "Fix the footer"',
    'pheby changes "Fix the footer" src/footer.ts',
    "pheby changes 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 --json",
  ],
  async run({ positionals, flags, io, connect }) {
    const target = required(positionals, 0, "<conversation>");
    const fileArg = positionals[1];
    const json = flags.json === true;
    const client = await connect();
    requireFeature(client, FEATURE_CHANGES, "pheby changes");
    const conversation_id = await resolveConversation(client, target);
    const snapshot = await client.listChanges(conversation_id);
    if (fileArg !== undefined) {
      // A path as listed is looked up in the list; anything else is tried as a file_id (a file past
      // the list's first 1,000, or one listed earlier).
      const fileId = findChangedFile(snapshot.files, fileArg)?.file_id ?? fileArg;
      await printPatch(client, io, conversation_id, fileId, json);
      return EXIT.ok;
    }
    if (json) {
      writeJson(io, { base: snapshot.base, files: snapshot.files, truncated: snapshot.truncated });
      return EXIT.ok;
    }
    const add = snapshot.files.reduce((n, f) => n + f.additions, 0);
    const del = snapshot.files.reduce((n, f) => n + f.deletions, 0);
    const count = snapshot.files.length;
    writeLine(
      io,
      `base ${safe(snapshot.base.label)} · ${count} file${count === 1 ? "" : "s"} +${add} −${del}`,
    );
    for (const file of snapshot.files) writeLine(io, changedFileLine(file));
    if (snapshot.truncated) note(io, "(more than 1,000 files differ; the rest are left out)");
    return EXIT.ok;
  },
};
