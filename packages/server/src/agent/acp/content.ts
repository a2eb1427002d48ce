/**
 * Content in both directions: client attachments become prompt content blocks,
 * and agent output (image/resource blocks, Hermes `MEDIA:<path>` lines) becomes
 * produced files.
 */
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ContentBlock, PromptCapabilities } from "@agentclientprotocol/sdk";
import type { AttachmentRef, ProducedFile } from "../port.js";

/** Build the `session/prompt` content of one turn, honouring what the agent declared it accepts. */
export async function promptBlocks(
  text: string,
  attachments: readonly AttachmentRef[],
  caps: PromptCapabilities | undefined,
): Promise<ContentBlock[]> {
  const blocks: ContentBlock[] = [{ type: "text", text }];
  for (const a of attachments) {
    const uri = pathToFileURL(a.path).href;
    if (a.kind === "image" && caps?.image) {
      const data = (await readFile(a.path)).toString("base64");
      blocks.push({ type: "image", data, mimeType: a.mimeType, uri });
    } else if (a.inlineText !== undefined && caps?.embeddedContext) {
      blocks.push({ type: "resource", resource: { uri, mimeType: a.mimeType, text: a.inlineText } });
    } else if (a.inlineText !== undefined) {
      // Baseline agents take only text and links: inline small text into the prompt itself.
      blocks.push({ type: "text", text: `\n\n--- ${a.filename} ---\n${a.inlineText}` });
    } else {
      // resource_link is baseline ACP; the agent runs on this host, so the store path is readable.
      blocks.push({ type: "resource_link", uri, name: a.filename, mimeType: a.mimeType, size: a.size });
    }
  }
  return blocks;
}

/** A file reference found in agent output: bytes to store, or a host path still to be root-checked. */
export type FoundFile = ProducedFile;

/** Files carried by a non-text content block of an agent message. */
export function filesInBlock(block: ContentBlock): FoundFile[] {
  if (block.type === "image" || block.type === "audio") {
    const ext = block.mimeType.split("/")[1]?.replace(/[^a-z0-9]/gi, "") || "bin";
    return [
      {
        source: "bytes",
        bytes: Buffer.from(block.data, "base64"),
        filename: `${block.type}.${ext}`,
        mimeType: block.mimeType,
      },
    ];
  }
  if (block.type === "resource") {
    const r = block.resource;
    const filename = nameFromUri(r.uri) ?? "resource";
    const mimeType = r.mimeType ?? ("text" in r ? "text/plain" : "application/octet-stream");
    const bytes = "blob" in r ? Buffer.from(r.blob, "base64") : Buffer.from(r.text, "utf8");
    return [{ source: "bytes", bytes, filename, mimeType }];
  }
  if (block.type === "resource_link" && block.uri.startsWith("file:")) {
    const path = fileURLToPath(block.uri);
    return [
      { source: "path", path, filename: block.name || basename(path), mimeType: block.mimeType ?? undefined },
    ];
  }
  return [];
}

function nameFromUri(uri: string): string | null {
  const last = uri.split(/[/\\]/).pop()?.split(/[?#]/)[0];
  return last ? decodeURIComponent(last) : null;
}

const MEDIA_LINE = /^[ \t]*MEDIA:[ \t]*(.+?)[ \t]*$/;
const MEDIA_TAG = "MEDIA:";

/**
 * Removes Hermes `MEDIA:<path>` lines from streamed text and reports their paths.
 *
 * Text streams in arbitrary chunks, so a line is held back only while it could
 * still turn into a MEDIA line; everything else passes through at once.
 */
export class MediaLineFilter {
  private pending = "";
  /** False while the current line already had text shown (so it cannot be a MEDIA line). */
  private atLineStart = true;

  constructor(private readonly onMedia: (path: string) => void) {}

  /** Feed a chunk; returns the text that can be shown now. */
  push(chunk: string): string {
    let out = "";
    let text = this.pending + chunk;
    this.pending = "";
    for (;;) {
      const nl = text.indexOf("\n");
      if (nl < 0) break;
      const line = text.slice(0, nl);
      out += this.atLineStart ? this.line(line, true) : `${line}\n`;
      this.atLineStart = true;
      text = text.slice(nl + 1);
    }
    const head = text.trimStart();
    const couldBeMedia = head.length === 0 || MEDIA_TAG.startsWith(head) || head.startsWith(MEDIA_TAG);
    if (this.atLineStart && couldBeMedia) this.pending = text;
    else if (text.length > 0) {
      out += text;
      this.atLineStart = false;
    }
    return out;
  }

  /** End of the message: release what was held back. */
  flush(): string {
    const rest = this.pending;
    this.pending = "";
    this.atLineStart = true;
    return rest ? this.line(rest, false) : "";
  }

  private line(line: string, newline: boolean): string {
    const media = MEDIA_LINE.exec(line);
    if (media?.[1]) {
      this.onMedia(media[1].replace(/^[`'"]|[`'"]$/g, ""));
      return "";
    }
    return newline ? `${line}\n` : line;
  }
}

/** Strip MEDIA lines from a complete text (history replay), discarding the paths. */
export function stripMediaLines(text: string): string {
  const filter = new MediaLineFilter(() => {});
  return filter.push(text) + filter.flush();
}
