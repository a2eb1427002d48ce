import { z } from "zod/v3";
import { conversationEvent, event, OpaqueId, request, Timestamp } from "../common.js";
import { REASONING_EFFORTS, SETTING_SCOPES } from "../constants.js";
import { optionalAgentIdEvent, optionalAgentIdRequest } from "./workspaces.js";

/** One provider of `models.snapshot`. */
export const ModelProvider = z
  .object({
    slug: z.string(),
    name: z.string(),
    is_current: z.boolean(),
    models: z.array(z.string()),
    total_models: z.number().int().nonnegative(),
  })
  .describe("A model provider and its models");

const scope = z.enum(SETTING_SCOPES);

/** `models.list`: optional `conversation_id` makes the current values reflect its override. */
export const ModelsList = request(
  "models.list",
  { conversation_id: OpaqueId.optional(), ...optionalAgentIdRequest },
  "List providers and models",
);

/** `models.snapshot`: reply to `models.list`. */
export const ModelsSnapshot = event(
  "models.snapshot",
  {
    providers: z.array(ModelProvider),
    current_model: z.string().nullable(),
    current_provider: z.string().nullable(),
    scope: scope.optional().describe("Where the current values come from"),
    supported_reasoning_efforts: z.array(z.enum(REASONING_EFFORTS)),
    ts: Timestamp,
  },
  "Providers and models",
);

/** `models.current`. */
export const ModelsCurrent = request(
  "models.current",
  { conversation_id: OpaqueId.optional(), ...optionalAgentIdRequest },
  "Read the current model",
);

/** `model.current`: reply to `models.current`. */
export const ModelCurrent = conversationEvent(
  "model.current",
  {
    model: z.string().nullable(),
    provider: z.string().nullable(),
    scope,
    conversation_id: z.string().optional().describe("Present when scope is conversation"),
    ts: Timestamp,
  },
  "The current model",
);

/** `model.set`: with `conversation_id` a per-conversation override, without it the global default. */
export const ModelSet = request(
  "model.set",
  {
    model: OpaqueId,
    provider: OpaqueId.optional(),
    conversation_id: OpaqueId.optional().describe("Present: conversation override; absent: global default"),
    ...optionalAgentIdRequest,
  },
  "Change the model",
);

/** `model.changed`: reply (with request_id) and broadcast (without). */
export const ModelChanged = conversationEvent(
  "model.changed",
  {
    model: z.string(),
    provider: z.string().nullable(),
    scope,
    conversation_id: z.string().optional().describe("Present when scope is conversation"),
    ...optionalAgentIdEvent,
  },
  "The model changed",
);

/** Parsed form of {@link ModelProvider}. */
export type ModelProvider = z.infer<typeof ModelProvider>;
