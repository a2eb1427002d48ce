import { rename, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { Writable } from "node:stream";
import { type DownloadResult, downloadAttachment, uploadAttachment } from "@pheby/client";
import { type Command, EXIT, required } from "../command.js";
import { writeJson, writeLine } from "../io.js";
import { Progress } from "../progress.js";
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

export const download: Command = {
  name: "download",
  usage: "<attachment_id> [-o path]",
  summary:
    "Download an attachment. Without -o it is saved in the current directory under its own (sanitised) name; -o - writes to stdout.",
  details: ["  -o, --output PATH     where to save it (- for stdout)"],
  options: { output: { type: "string", short: "o" } },
  examples: [
    "pheby download e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0",
    "pheby download e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0 -o report.pdf",
  ],
  async run({ positionals, flags, io, server }) {
    const id = required(positionals, 0, "<attachment_id>");
    const output = flags.output as string | undefined;
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
    } else if (output !== undefined) {
      result = await downloadAttachment(server(), id, { to: output, onProgress });
      path = output;
    } else {
      // The name is only known from the response, so stream to a temporary file first.
      const partial = join(process.cwd(), `.pheby-${id.replace(/[^0-9a-z]/gi, "")}.part`);
      try {
        result = await downloadAttachment(server(), id, { to: partial, onProgress });
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
      path = safeFilename(result.filename, id);
      await rename(partial, path);
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
