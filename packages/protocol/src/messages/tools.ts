import { z } from "zod/v3";
import { conversationEvent, Timestamp } from "../common.js";
import { TOOL_STATUSES } from "../constants.js";

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
};

/** `tool.event`: structured tool activity, never chat text. */
export const ToolEvent = conversationEvent("tool.event", toolFields, "Structured tool activity");

/** The latest state of one tool call, as listed in `conversation.history.tools`. */
export const ToolState = z.object(toolFields).describe("Latest state of one tool call");

/** Parsed form of {@link ToolState}. */
export type ToolState = z.infer<typeof ToolState>;
