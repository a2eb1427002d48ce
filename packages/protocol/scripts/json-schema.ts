// Builds the three JSON Schema bundles (client, server, http) from the Zod
// source, and meta.json (the protocol's tables, see meta.ts). Used by `pnpm schema`
// to write them and by the drift test to compare.
import { ZodEffects, type ZodTypeAny } from "zod/v3";
import { ignoreOverride, parseDef, zodToJsonSchema } from "zod-to-json-schema";
import {
  Agent,
  AgentCommand,
  AgentMode,
  AttachmentDescriptor,
  ChangedFile,
  ChangesBase,
  ContextUsage,
  ConversationPreview,
  ConversationSummary,
  clientMessageSchemas,
  Device,
  DeviceCredentials,
  ErrorDetail,
  type FieldRule,
  fieldRulesOf,
  Hex32Id,
  HistoryMessage,
  HistoryThought,
  httpBodySchemas,
  jsonSchemaHints,
  ModelProvider,
  OpaqueId,
  PendingApproval,
  PendingClarification,
  PlanEntry,
  PushKeys,
  PushServerInfo,
  PushSubscriptionInfo,
  pushPayloadSchemas,
  QueuedRun,
  RunState,
  Schedule,
  SearchResult,
  serverMessageSchemas,
  ToolContentBlock,
  ToolDiffBlock,
  ToolLocation,
  ToolOtherBlock,
  ToolState,
  ToolTextBlock,
  UsageCost,
  Workspace,
} from "../src/index.js";
import { buildMeta } from "./meta.js";

type JsonObject = Record<string, unknown>;

/** "conversation.open" → "ConversationOpen"; "error" → "ProtocolError" (avoids kotlin.Error). */
export function definitionName(type: string): string {
  if (type === "error") return "ProtocolError";
  return type
    .split(/[._]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");
}

/** The push payload member of `kind`: "run_finished" → "PushRunFinishedPayload". */
export function pushPayloadName(kind: string): string {
  return `Push${definitionName(kind)}Payload`;
}

// Every nested object gets a name: code generators (the Kotlin models) need one per class.
const sharedDefinitions: Record<string, ZodTypeAny> = {
  AgentCommand,
  AgentMode,
  AttachmentDescriptor,
  ConversationPreview,
  ConversationSummary,
  Device,
  DeviceCredentials,
  ErrorDetail,
  Hex32Id,
  HistoryMessage,
  HistoryThought,
  ModelProvider,
  OpaqueId,
  PendingApproval,
  PendingClarification,
  PushKeys,
  PushServerInfo,
  PushSubscriptionInfo,
  QueuedRun,
  RunState,
  Schedule,
  SearchResult,
  ToolState,
  // activity
  ContextUsage,
  PlanEntry,
  ToolContentBlock,
  ToolDiffBlock,
  ToolLocation,
  ToolOtherBlock,
  ToolTextBlock,
  UsageCost,
  // workspaces
  Agent,
  Workspace,
  // changes
  ChangedFile,
  ChangesBase,
};

/**
 * Shared definitions that are unions of other definitions, by their discriminator. Emitted as
 * `oneOf` + `discriminator`, the shape of the message unions, so code generators make them sealed
 * types with an unknown case (a newer server's block type).
 */
const sharedUnions: Record<string, string> = { ToolContentBlock: "type" };

/** A {@link FieldRule} in JSON Schema terms: combinations of `required`. */
function ruleJson(rule: FieldRule): JsonObject {
  switch (rule.kind) {
    case "exactlyOne":
      return { oneOf: rule.keys.map((k) => ({ required: [k] })) };
    case "atMostOne":
      return { not: { required: [...rule.keys] } };
    case "atLeastOne":
      return { anyOf: rule.keys.map((k) => ({ required: [k] })) };
  }
}

/** A schema with field rules is emitted as its object (so references find it) plus `allOf` of its rules. */
const unrefined = (schema: ZodTypeAny) =>
  schema instanceof ZodEffects && fieldRulesOf(schema) ? schema.innerType() : schema;

function bundle(title: string, description: string, messages: Record<string, ZodTypeAny>, union: boolean) {
  // Leaf definitions first: whichever definition meets a schema first names it.
  const definitions: Record<string, ZodTypeAny> = { ...sharedDefinitions };
  for (const [type, schema] of Object.entries(messages))
    definitions[definitionName(type)] = unrefined(schema);
  // An object schema with nothing but the definitions: each one is emitted once, named.
  const json = zodToJsonSchema(ErrorDetail, {
    target: "jsonSchema7",
    definitions,
    $refStrategy: "root",
    definitionPath: "definitions",
    // Tolerant reader: unknown fields are allowed in both directions (docs/protocol.md).
    removeAdditionalStrategy: "strict",
    allowedAdditionalProperties: undefined,
    override: (def, refs) => {
      const inner = (def as { typeName?: string; schema?: ZodTypeAny }).schema;
      const hint =
        (def as { typeName?: string }).typeName === "ZodEffects" && inner && jsonSchemaHints.get(inner);
      if (!hint || !inner) return ignoreOverride;
      if ("uniqueItems" in hint) return { ...parseDef(inner._def, refs), uniqueItems: true } as never;
      return {
        type: "string",
        ...(def.description ? { description: def.description } : {}),
        maxLength: hint.maxLength,
        ...(hint.nonBlank ? { minLength: 1, pattern: "\\S" } : {}),
      } as never;
    },
    postProcess: (json, def) => {
      const rules = fieldRulesOf(def);
      return rules && json ? ({ ...json, allOf: rules.map(ruleJson) } as typeof json) : json;
    },
  }) as JsonObject;
  const defs = inlinePathRefs(json.definitions as Record<string, JsonObject>);
  for (const [name, key] of Object.entries(sharedUnions)) {
    const def = defs[name];
    if (!def) continue;
    const { anyOf, ...rest } = def;
    if (!Array.isArray(anyOf)) throw new Error(`${name}: expected anyOf from a discriminated union`);
    defs[name] = { ...rest, oneOf: anyOf, discriminator: { propertyName: key } };
  }
  // Only keep shared definitions this bundle uses.
  for (const name of Object.keys(sharedDefinitions)) {
    const usedElsewhere = Object.entries(defs).some(
      ([k, d]) => k !== name && JSON.stringify(d).includes(`"#/definitions/${name}"`),
    );
    if (!usedElsewhere && !(name in messages)) delete defs[name];
  }
  for (const [name, def] of Object.entries(defs)) def.title = name;
  const out: JsonObject = {
    $schema: "http://json-schema.org/draft-07/schema#",
    $id: `https://pheby.dev/schema/v1/${title.toLowerCase()}.schema.json`,
    title: `Pheby Protocol v1: ${title}`,
    description,
  };
  if (union) {
    out.oneOf = Object.keys(messages).map((type) => ({ $ref: `#/definitions/${definitionName(type)}` }));
    out.discriminator = { propertyName: "type" };
  }
  out.definitions = Object.fromEntries(Object.entries(defs).sort(([a], [b]) => a.localeCompare(b)));
  return out;
}

/**
 * zod-to-json-schema refers to a reused field by its path inside another
 * definition (`#/definitions/Hello/properties/request_id`). Code generators
 * handle such refs poorly, so every ref that is not to a whole definition is
 * replaced by a copy of its target.
 */
function inlinePathRefs(defs: Record<string, JsonObject>): Record<string, JsonObject> {
  const resolve = (ref: string): unknown => {
    let node: unknown = { definitions: defs };
    for (const part of ref.slice(2).split("/")) node = (node as JsonObject)[part];
    return node;
  };
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== "object") return node;
    const obj = node as JsonObject;
    const ref = obj.$ref;
    if (typeof ref === "string" && /^#\/definitions\/[^/]+\/./.test(ref)) {
      const { $ref: _drop, ...rest } = obj;
      return walk({ ...(resolve(ref) as JsonObject), ...rest });
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, walk(v)]));
  };
  return walk(defs) as Record<string, JsonObject>;
}

/** The three bundles and meta.json, keyed by file name in schema/. */
export function buildSchemas(): Record<string, JsonObject> {
  return {
    "client.schema.json": bundle(
      "ClientMessage",
      "Every client-to-server WebSocket message, discriminated on type",
      clientMessageSchemas,
      true,
    ),
    "server.schema.json": bundle(
      "ServerMessage",
      "Every server-to-client WebSocket message, discriminated on type",
      serverMessageSchemas,
      true,
    ),
    "http.schema.json": httpBundle(),
    "meta.json": buildMeta() as unknown as JsonObject,
  };
}

/** HTTP bodies, plus the push payload: a union of one definition per `kind`, like the message bundles. */
function httpBundle(): JsonObject {
  const { PushPayload, ...bodies } = httpBodySchemas;
  const members = Object.fromEntries(
    Object.entries(pushPayloadSchemas).map(([kind, schema]) => [pushPayloadName(kind), schema]),
  );
  const out = bundle(
    "HTTP",
    "HTTP bodies: the attachment descriptor and upload response, the error body, the answers of POST /approvals/{approval_id} and POST /clarify/{clarify_id}, and the Web Push payload (PushPayload, discriminated on kind)",
    { ...bodies, ...members } as Record<string, ZodTypeAny>,
    false,
  );
  const definitions = out.definitions as Record<string, JsonObject>;
  definitions.PushPayload = {
    description: PushPayload.description,
    oneOf: Object.keys(members).map((name) => ({ $ref: `#/definitions/${name}` })),
    discriminator: { propertyName: "kind" },
    title: "PushPayload",
  };
  out.definitions = Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => a.localeCompare(b)));
  return out;
}

/** Serialize a bundle exactly as committed. */
export function serialize(schema: JsonObject): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
