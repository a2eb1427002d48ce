import { randomBytes } from "node:crypto";
import { type AttachmentDescriptor, ErrorBody, UploadResponse } from "@pheby/protocol";
import type { CheckContext } from "../context.js";
import { expectFinished } from "../context.js";
import { CheckFailure, expect } from "../failure.js";
import type { Check } from "../types.js";
import { UNKNOWN_ID } from "./errors.js";

const SECTION = "Attachments (both directions)";
const NOT_FOUND_BODY = '{"error":{"code":"not_found","message":"Attachment unavailable"}}';

/** POST bytes to /attachments; returns the response and its parsed body. */
async function upload(
  ctx: CheckContext,
  conversationId: string,
  filename: string,
  bytes: Uint8Array,
  auth = true,
) {
  const query = new URLSearchParams({ conversation_id: conversationId, filename });
  const response = await ctx.http(`/attachments?${query}`, {
    method: "POST",
    auth,
    headers: { "content-type": "application/octet-stream" },
    body: bytes as Uint8Array<ArrayBuffer>,
  });
  const text = await response.text();
  return { status: response.status, text };
}

function parseUpload(text: string): AttachmentDescriptor {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CheckFailure("the 201 body is not JSON", text);
  }
  const parsed = UploadResponse.safeParse(json);
  if (!parsed.success)
    throw new CheckFailure(
      `the 201 body does not match the protocol: ${parsed.error.issues[0]?.message}`,
      json,
    );
  return parsed.data.attachment;
}

export const attachmentChecks: Check[] = [
  {
    id: "attachments.auth",
    section: SECTION,
    title: "uploads and downloads without the secret get 401; an unknown ID gets the spec's exact 404 body",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      const anonymous = await upload(ctx, id, "x.txt", new TextEncoder().encode("x"), false);
      expect(
        anonymous.status === 401,
        `an upload without credentials got ${anonymous.status}`,
        anonymous.text,
      );
      const download = await ctx.http(`/attachments/${UNKNOWN_ID}`, { auth: false });
      expect(download.status === 401, `a download without credentials got ${download.status}`);
      const unknown = await ctx.http(`/attachments/${UNKNOWN_ID}`);
      const body = await unknown.text();
      expect(unknown.status === 404, `an unknown attachment got ${unknown.status}`, body);
      expect(
        ErrorBody.safeParse(JSON.parse(body)).success && JSON.stringify(JSON.parse(body)) === NOT_FOUND_BODY,
        "the 404 body is not the spec's",
        body,
      );
      const traversal = await ctx.http("/attachments/..%2F..%2Fetc%2Fpasswd");
      expect(traversal.status === 404, `a traversal attempt got ${traversal.status}`, await traversal.text());
    },
  },
  {
    id: "attachments.upload_errors",
    section: SECTION,
    title: "an empty body or an unknown conversation gets 400",
    async run(ctx) {
      const probe = await ctx.connect();
      const id = await ctx.createConversation(probe);
      const empty = await upload(ctx, id, "empty.bin", new Uint8Array());
      expect(empty.status === 400, `an empty upload got ${empty.status}`, empty.text);
      const unknown = await upload(ctx, UNKNOWN_ID, "x.bin", new Uint8Array([1]));
      expect(
        unknown.status === 400,
        `an upload to an unknown conversation got ${unknown.status}`,
        unknown.text,
      );
    },
  },
  {
    id: "attachments.roundtrip",
    section: SECTION,
    title:
      "upload → 201 descriptor; download is byte-identical with Range support; chat.send claims it once and broadcasts attachment.added",
    async run(ctx) {
      const a = await ctx.connect("a");
      const b = await ctx.connect("b");
      const conversation_id = await ctx.createConversation(a);
      const bytes = randomBytes(200 * 1024);
      const created = await upload(ctx, conversation_id, "../conformance/data.bin", bytes);
      expect(created.status === 201, `upload answered ${created.status}`, created.text);
      const att = parseUpload(created.text);
      expect(
        att.direction === "inbound" && att.message_id === null,
        "a fresh upload is not inbound and unclaimed",
        att,
      );
      expect(att.size === bytes.length, "the descriptor's size is wrong", att);
      expect(!/[/\\]/.test(att.filename), "the filename keeps a path", att);
      const full = await ctx.http(att.download_path);
      const got = new Uint8Array(await full.arrayBuffer());
      expect(full.status === 200 && Buffer.from(got).equals(bytes), "the download is not byte-identical", {
        status: full.status,
        size: got.length,
      });
      expect(
        full.headers.get("x-content-type-options") === "nosniff",
        "the download lacks X-Content-Type-Options: nosniff",
      );
      const first = await ctx.http(att.download_path, { headers: { range: "bytes=0-0" } });
      const firstByte = new Uint8Array(await first.arrayBuffer());
      expect(
        first.status === 206 && firstByte.length === 1 && firstByte[0] === bytes[0],
        `Range bytes=0-0 answered ${first.status}`,
      );
      const beyond = await ctx.http(att.download_path, { headers: { range: `bytes=${bytes.length}-` } });
      await beyond.arrayBuffer();
      expect(beyond.status === 416, `an unsatisfiable range answered ${beyond.status}`);
      const from = b.frames.length;
      const trace = await ctx.chat(a, conversation_id, "Here is a file", {
        attachmentIds: [att.attachment_id],
      });
      expectFinished(trace, "completed");
      const added = await b.waitFor(
        (m) => m.type === "attachment.added" && m.attachment.attachment_id === att.attachment_id,
        "attachment.added on the other connection",
        { from },
      );
      expect(
        added.type === "attachment.added" && added.attachment.message_id !== null,
        "the claimed attachment has no message_id",
        added,
      );
      await a.expectError(
        { type: "chat.send", conversation_id, text: "again", attachment_ids: [att.attachment_id] },
        "bad_request",
        "claiming an already-sent attachment",
      );
    },
  },
  {
    id: "attachments.deliverables",
    section: SECTION,
    title:
      "/sim image and /sim file: outbound attachment.added with the run's message_id; the PNG downloads intact",
    needs: { simulator: true },
    async run(ctx) {
      const probe = await ctx.connect();
      const conversation_id = await ctx.createConversation(probe);
      for (const [text, kind] of [
        ["/sim image", "image"],
        ["/sim file", "document"],
      ] as const) {
        const from = probe.frames.length;
        const trace = await ctx.chat(probe, conversation_id, text);
        expectFinished(trace, "completed");
        const added = probe.frames
          .slice(from)
          .find((m) => m.type === "attachment.added" && m.conversation_id === conversation_id);
        expect(added?.type === "attachment.added", `${text} broadcast no attachment.added`, trace.frames);
        const att = added.attachment;
        const start = trace.frames.find((m) => m.type === "message.start");
        expect(
          att.direction === "outbound" && att.kind === kind,
          `${text} did not deliver an outbound ${kind}`,
          added,
        );
        expect(
          start?.type === "message.start" && att.message_id === start.message_id,
          "the deliverable does not carry the run's message_id",
          added,
        );
        const response = await ctx.http(att.download_path);
        const body = new Uint8Array(await response.arrayBuffer());
        expect(response.status === 200 && body.length === att.size, `downloading ${text}'s file failed`, {
          status: response.status,
          size: body.length,
        });
        if (kind === "image") {
          const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
          expect(
            png.every((b, i) => body[i] === b) && att.inline_image,
            "/sim image is not an inline PNG",
            added,
          );
        }
      }
    },
  },
];
