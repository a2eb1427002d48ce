import { z } from "zod/v3";
import { conversationEvent, OpaqueId, request, Timestamp } from "../common.js";
import { REASONING_EFFORTS, SETTING_SCOPES } from "../constants.js";
import { optionalAgentIdEvent, optionalAgentIdRequest } from "./workspaces.js";

const effort = z.enum(REASONING_EFFORTS);
const scope = z.enum(SETTING_SCOPES);

/** `reasoning.current`. */
export const ReasoningCurrent = request(
  "reasoning.current",
  { conversation_id: OpaqueId.optional(), ...optionalAgentIdRequest },
  "Read the reasoning effort",
);

/** `reasoning.snapshot`: reply to `reasoning.current`. */
export const ReasoningSnapshot = conversationEvent(
  "reasoning.snapshot",
  {
    effort: effort.nullable().describe("Effective effort; null means the provider default"),
    enabled: z.boolean().describe("false means thinking is disabled"),
    scope,
    conversation_id: z.string().optional(),
    supported_efforts: z.array(effort),
    ts: Timestamp,
  },
  "The reasoning effort",
);

/** `reasoning.set`: `none` disables thinking. */
export const ReasoningSet = request(
  "reasoning.set",
  { effort, conversation_id: OpaqueId.optional(), ...optionalAgentIdRequest },
  "Change the reasoning effort",
);

/** `reasoning.changed`: reply (with request_id) and broadcast (without). */
export const ReasoningChanged = conversationEvent(
  "reasoning.changed",
  { effort, scope, conversation_id: z.string().optional(), ...optionalAgentIdEvent },
  "The reasoning effort changed",
);
