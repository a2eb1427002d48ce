import { z } from "zod/v3";
import { conversationEvent, Timestamp, utf8ByteLength } from "../common.js";
import { LIMITS, TOOL_STATUSES } from "../constants.js";
import { toolActivityFields } from "./activity.js";

const toolFields = {
  conversation_id: z.string(),
  run_id: z.string().optional().describe("The active run, when the tool runs inside one"),
  tool_call_id: z.string().describe("Correlates running with its completion"),
  tool_name: z.string(),
  status: z.enum(TOOL_STATUSES),
  args_redacted: z
    .record(z.unknown())
    .optional()
    .describe("Only on running; secret-looking keys are redacted recursively"),
  duration_ms: z
    .number()
    .int()
    .nonnegative()
    .nullable()
    .optional()
    .describe("Only on completed/failed/cancelled; null when unknown"),
  error: z.string().optional().describe("Only on failed; truncated"),
  ts: Timestamp,
  ...toolActivityFields,
};

/**
 * `tool.event`: structured tool activity, never chat text. With `activity` it may carry the call's
 * detail, and then never exceeds {@link LIMITS}.toolEventBytes serialised (JSON Schema cannot say so).
 */
export const ToolEvent = conversationEvent("tool.event", toolFields, "Structured tool activity").superRefine(
  (event, ctx) => {
    // Only a frame with detail can come near the bound; v1 frames skip the serialisation.
    if (event.content === undefined && event.locations === undefined) return;
    if (utf8ByteLength(JSON.stringify(event)) > LIMITS.toolEventBytes) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `must be at most ${LIMITS.toolEventBytes} bytes of JSON`,
      });
    }
  },
);

/** The latest state of one tool call, as listed in `conversation.history.tools`. */
export const ToolState = z.object(toolFields).describe("Latest state of one tool call");

/** Parsed form of {@link ToolState}. */
export type ToolState = z.infer<typeof ToolState>;
