import { existsSync } from "node:fs";
import { link, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Writable } from "node:stream";
import { type DownloadResult, downloadAttachment, uploadAttachment } from "@pheby/client";
import { type Command, EXIT, required } from "../command.js";
import { note, writeJson, writeLine } from "../io.js";
import { formatBytes, Progress } from "../progress.js";
import { isId, resolveConversation } from "../resolve.js";

export const upload: Command = {
  name: "upload",
  usage: "<conversation> <file…>",
  summary:
    "Upload files to a conversation and print their attachment IDs. Send them with `pheby chat <conversation> <text> --attach ID`.",
  examples: [
    'pheby upload "Trip planning" tickets.pdf map.png',
    "pheby upload 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 notes.md --json",
  ],
  async run({ positionals, flags, io, server, connect }) {
    const target = required(positionals, 0, "<conversation>");
    const files = positionals.slice(1);
    required(files, 0, "<file>");
    // An ID needs no WebSocket at all: uploads are plain HTTP.
    const conversationId = isId(target) ? target : await resolveConversation(await connect(), target);
    for (const file of files) {
      const progress = new Progress(io, basename(file));
      const attachment = await uploadAttachment(server(), conversationId, file, {
        onProgress: (done, total) => progress.update(done, total),
      });
      progress.done(attachment.size);
      if (flags.json === true) writeJson(io, attachment);
      else
        writeLine(
          io,
          `${attachment.attachment_id}  ${attachment.filename}  ${attachment.size} bytes  ${attachment.kind}`,
        );
    }
    return EXIT.ok;
  },
};

/** A safe local file name from a server-provided one: no directories, no control characters. */
export function safeFilename(name: string | null, fallback: string): string {
  const base = [...basename((name ?? "").replace(/\\/g, "/"))]
    .filter((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f)
    .join("")
    .trim();
  return base && base !== "." && base !== ".." ? base : fallback;
}

/** Refuse to replace an existing file unless --force: a download must never clobber silently (exit 1). */
function refuseExisting(path: string): never {
  throw Object.assign(
    new Error(`${path} already exists; pass --force to replace it, or -o to choose another path`),
    { code: "EEXIST" },
  );
}

/**
 * Move a finished download into place. Without `force` it is a hard link, which
 * fails if the name exists (no check-then-write race), then the temporary file goes.
 */
async function place(partial: string, path: string, force: boolean): Promise<void> {
  if (force) {
    await rename(partial, path);
    return;
  }
  try {
    await link(partial, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") refuseExisting(path);
    throw err;
  } finally {
    await rm(partial, { force: true });
  }
}

export const download: Command = {
  name: "download",
  usage: "<attachment_id> [-o path] [--force]",
  summary:
    "Download an attachment. Without -o it is saved in the current directory under its own (sanitised) name; -o - writes to stdout. An existing file is never replaced without --force.",
  details: [
    "  -o, --output PATH     where to save it (- for stdout)",
    "  -f, --force           replace the file if it already exists (without it, exit 1 and keep it)",
  ],
  options: { output: { type: "string", short: "o" }, force: { type: "boolean", short: "f" } },
  examples: [
    "pheby download e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0",
    "pheby download e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0 -o report.pdf --force",
  ],
  async run({ positionals, flags, io, server }) {
    const id = required(positionals, 0, "<attachment_id>");
    const output = flags.output as string | undefined;
    const force = flags.force === true;
    const progress = new Progress(io, id.slice(0, 12));
    const onProgress = (done: number, total: number | undefined) => progress.update(done, total);
    let result: DownloadResult;
    let path: string;
    if (output === "-") {
      result = await downloadAttachment(server(), id, {
        to: Writable.toWeb(io.stdout) as WritableStream<Uint8Array>,
        onProgress,
      });
      path = "-";
    } else {
      // Fail before downloading when -o names an existing file; the final link still guards the race.
      if (output !== undefined && !force && existsSync(output)) refuseExisting(output);
      // Stream to a temporary file beside the target (the name may only be known from the response).
      const partial = join(
        output === undefined ? process.cwd() : dirname(output),
        `.pheby-${id.replace(/[^0-9a-z]/gi, "")}.part`,
      );
      try {
        result = await downloadAttachment(server(), id, { to: partial, onProgress });
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
      path = output ?? safeFilename(result.filename, id);
      await place(partial, path, force);
    }
    progress.done(result.size);
    if (path !== "-") {
      if (flags.json === true)
        writeJson(io, { attachment_id: id, path, size: result.size, content_type: result.contentType });
      else writeLine(io, `${path}  ${result.size} bytes`);
    }
    return EXIT.ok;
  },
};

export const attachments: Command = {
  name: "attachments",
  usage: "<conversation>",
  summary:
    "List a conversation's attachments (both directions, unexpired), oldest first, from its conversation.open snapshot. Fetch one with `pheby download ID`.",
  examples: [
    'pheby attachments "Trip planning"',
    "pheby attachments 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 --json",
  ],
  async run({ positionals, flags, io, connect }) {
    const client = await connect();
    const conversation_id = await resolveConversation(client, required(positionals, 0, "<conversation>"));
    const snapshot = await client.request({ type: "conversation.open", conversation_id, limit: 1 });
    for (const a of snapshot.attachments) {
      if (flags.json === true) writeJson(io, a);
      else
        writeLine(
          io,
          [
            a.attachment_id,
            a.direction === "inbound" ? "in " : "out",
            a.created_at,
            formatBytes(a.size).padStart(9),
            a.mime_type,
            a.filename,
          ].join("  "),
        );
    }
    if (flags.json !== true && snapshot.attachments.length === 0) note(io, "no attachments");
    return EXIT.ok;
  },
};
