import { z } from "zod/v3";
import { conversationEvent, Hex32Id, Timestamp } from "../common.js";
import { ATTACHMENT_DIRECTIONS, ATTACHMENT_KINDS } from "../constants.js";

/** Metadata of one stored attachment, in either direction. */
export const AttachmentDescriptor = z
  .object({
    attachment_id: Hex32Id,
    filename: z.string().describe("Display name only; never a path"),
    mime_type: z.string(),
    size: z.number().int().nonnegative().describe("Bytes"),
    kind: z.enum(ATTACHMENT_KINDS),
    inline_image: z.boolean().describe("true only for raster images safe to preview inline"),
    direction: z.enum(ATTACHMENT_DIRECTIONS),
    conversation_id: z.string(),
    message_id: z.string().nullable().describe("The message it belongs to; null until claimed"),
    created_at: Timestamp,
    expires_at: Timestamp.nullable().describe("null when retention is 0 (kept forever)"),
    download_path: z.string().describe("Authenticated GET path, /attachments/{attachment_id}"),
  })
  .describe("An attachment's metadata");

/** Body of `201 Created` from `POST /attachments`. */
export const UploadResponse = z.object({ attachment: AttachmentDescriptor }).describe("Upload response");

/** `attachment.added`: an attachment was claimed by a send or produced by the agent. */
export const AttachmentAdded = conversationEvent(
  "attachment.added",
  { conversation_id: z.string(), attachment: AttachmentDescriptor, ts: Timestamp },
  "An attachment joined the conversation",
);

/** Parsed form of {@link AttachmentDescriptor}. */
export type AttachmentDescriptor = z.infer<typeof AttachmentDescriptor>;
/** Parsed form of {@link UploadResponse}. */
export type UploadResponse = z.infer<typeof UploadResponse>;
