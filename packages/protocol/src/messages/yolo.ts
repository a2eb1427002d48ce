import { z } from "zod/v3";
import { conversationEvent, OpaqueId, request } from "../common.js";

const scope = z.literal("conversation").describe("YOLO is always conversation-scoped");

/** `yolo.current`. */
export const YoloCurrent = request(
  "yolo.current",
  { conversation_id: OpaqueId },
  "Read a conversation's YOLO flag",
);

/** `yolo.snapshot`: reply to `yolo.current`. */
export const YoloSnapshot = conversationEvent(
  "yolo.snapshot",
  { enabled: z.boolean(), scope, conversation_id: z.string() },
  "A conversation's YOLO flag",
);

/** `yolo.set`: `enabled` must be a JSON boolean. */
export const YoloSet = request(
  "yolo.set",
  { conversation_id: OpaqueId, enabled: z.boolean() },
  "Turn auto-approve on or off for a conversation",
);

/** `yolo.changed`: reply (with request_id) and broadcast (without). */
export const YoloChanged = conversationEvent(
  "yolo.changed",
  { enabled: z.boolean(), scope, conversation_id: z.string() },
  "A conversation's YOLO flag changed",
);
