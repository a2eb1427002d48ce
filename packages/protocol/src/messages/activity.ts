import { z } from "zod/v3";
import { boundedBytes, boundedText, conversationEvent, OpaqueId, request, Timestamp } from "../common.js";
import { LIMITS, PLAN_ENTRY_PRIORITIES, PLAN_ENTRY_STATUSES, TOOL_KINDS } from "../constants.js";

// The `activity` extension (FEATURE_ACTIVITY): the agent's work beside its answer. Tool calls gain
// their kind, title, locations and content (diffs, output), approvals the call they are about and a
// preview of it, and the agent's plan and context usage get events of their own. Paths are relative to
// the conversation's path base; anything outside it is scrubbed (docs/security.md).

/** A diff's unified patch, at most {@link LIMITS}.toolPatchBytes of UTF-8. */
const Patch = boundedBytes(LIMITS.toolPatchBytes);

const PathText = boundedText({ max: LIMITS.toolPathChars });

/** One place a tool call touches: a file (and line) inside the path base, or one outside it. */
export const ToolLocation = z
  .object({
    path: PathText.nullable().describe(
      "Relative to the conversation's path base, /-separated, no ..; null when outside it",
    ),
    line: z.number().int().nonnegative().nullable().describe("The line, when the agent names one"),
    outside: z.boolean().describe("true when the location is outside the path base (path is then null)"),
    display: PathText.optional().describe(
      "Only when outside: the location as shown, with the server's own directories scrubbed",
    ),
  })
  .describe("A location a tool call reads or changes");

/** A diff the call makes (or proposes), computed on the server. */
export const ToolDiffBlock = z
  .object({
    type: z.literal("diff"),
    path: PathText.nullable().describe("Relative to the path base; null when the file is outside it"),
    display: PathText.describe("The file as shown: path, or the scrubbed location when outside"),
    outside: z.boolean().describe("true when the file is outside the path base"),
    patch: Patch.describe("Unified diff with 3 lines of context (at most 64 KiB)"),
    additions: z.number().int().nonnegative().describe("Lines added"),
    deletions: z.number().int().nonnegative().describe("Lines removed"),
    fragment: z
      .boolean()
      .describe(
        "true when the agent sent a fragment of the file, not all of it: hunk line numbers are relative to the fragment",
      ),
    truncated: z.boolean().describe("true when the patch or the event was cut to its limit"),
  })
  .describe("A diff of one file");

/** Text content or output of a call: redacted, the last characters kept. */
export const ToolTextBlock = z
  .object({
    type: z.literal("text"),
    text: boundedText({ max: LIMITS.toolTextChars }).describe(
      "Secret-looking values redacted; over the limit, the last 16,000 characters",
    ),
    truncated: z.boolean().describe("true when the start (or, cutting the event, the rest) was cut"),
  })
  .describe("Text content or output of a tool call");

/** Content the phone does not render: images, audio, resource links, terminals. */
export const ToolOtherBlock = z
  .object({
    type: z.literal("other"),
    label: boundedText({ max: LIMITS.toolLabelChars }).describe("What it is, e.g. image, terminal"),
  })
  .describe("Tool content shown by its label only");

/** One block of a tool call's content, discriminated on `type`; a newer server may send other types. */
export const ToolContentBlock = z
  .discriminatedUnion("type", [ToolDiffBlock, ToolTextBlock, ToolOtherBlock])
  .describe("One block of a tool call's content, discriminated on type");

/** A tool call's content: the whole current list, at most {@link LIMITS}.toolContentBlocks blocks. */
export const ToolContent = z.array(ToolContentBlock).max(LIMITS.toolContentBlocks);

/**
 * The fields `activity` adds to a tool call (`tool.event`, `conversation.history.tools[]`); each is
 * optional and present only on `activity` connections.
 */
export const toolActivityFields = {
  kind: z
    .enum(TOOL_KINDS)
    .optional()
    .describe("Only with the activity feature: the ACP tool kind (other when the agent gives none)"),
  title: boundedText({ max: LIMITS.toolTitleChars })
    .optional()
    .describe("Only with the activity feature: the agent's title for the call, host paths scrubbed"),
  locations: z
    .array(ToolLocation)
    .max(LIMITS.toolLocations)
    .optional()
    .describe("Only with the activity feature: the files the call touches"),
  content: ToolContent.optional().describe(
    "Only with the activity feature: the call's content as it stands; replaces any earlier list",
  ),
};

/** `tool.get`: the latest state of any recorded call of a conversation, with every `activity` field. */
export const ToolGet = request(
  "tool.get",
  { conversation_id: OpaqueId, tool_call_id: OpaqueId },
  "Get one tool call's latest state and detail",
);

/** One entry of the agent's plan. */
export const PlanEntry = z
  .object({
    content: boundedText({ max: LIMITS.planEntryChars }),
    status: z.enum(PLAN_ENTRY_STATUSES),
    priority: z.enum(PLAN_ENTRY_PRIORITIES),
  })
  .describe("One entry of the agent's plan");

/** A whole plan: each one replaces the previous. */
export const PlanEntries = z.array(PlanEntry).max(LIMITS.planEntries);

/** `plan.updated`: the agent's plan, whole, replacing the previous one. */
export const PlanUpdated = conversationEvent(
  "plan.updated",
  {
    conversation_id: z.string(),
    run_id: z.string().nullable().describe("The run it belongs to, or null outside a run"),
    entries: PlanEntries,
    ts: Timestamp,
  },
  "The agent's plan changed",
);

/** What the agent reports its session cost so far. */
export const UsageCost = z
  .object({
    amount: z.number().nonnegative(),
    currency: boundedText({ max: LIMITS.currencyChars }).describe("As the agent reports it, e.g. USD"),
  })
  .describe("Cumulative cost of the agent session");

const usageFields = {
  used: z.number().int().nonnegative().describe("Tokens in the agent's context"),
  size: z.number().int().nonnegative().describe("The context window, in tokens"),
  cost: UsageCost.nullable().describe(
    "Cumulative per agent session (starts again when the session is replaced), or null when not reported",
  ),
};

/** The latest context usage, as `conversation.history.usage` carries it. */
export const ContextUsage = z.object(usageFields).describe("The agent's context usage");

/** `usage.updated`: the agent's context usage after a change. */
export const UsageUpdated = conversationEvent(
  "usage.updated",
  { conversation_id: z.string(), ...usageFields, ts: Timestamp },
  "The agent's context usage changed",
);

/** Parsed form of {@link ToolLocation}. */
export type ToolLocation = z.infer<typeof ToolLocation>;
/** Parsed form of {@link ToolContentBlock}. */
export type ToolContentBlock = z.infer<typeof ToolContentBlock>;
/** Parsed form of {@link ToolDiffBlock}. */
export type ToolDiffBlock = z.infer<typeof ToolDiffBlock>;
/** Parsed form of {@link ToolTextBlock}. */
export type ToolTextBlock = z.infer<typeof ToolTextBlock>;
/** Parsed form of {@link ToolOtherBlock}. */
export type ToolOtherBlock = z.infer<typeof ToolOtherBlock>;
/** Parsed form of {@link PlanEntry}. */
export type PlanEntry = z.infer<typeof PlanEntry>;
/** Parsed form of {@link UsageCost}. */
export type UsageCost = z.infer<typeof UsageCost>;
/** Parsed form of {@link ContextUsage}. */
export type ContextUsage = z.infer<typeof ContextUsage>;
