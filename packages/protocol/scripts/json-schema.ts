// Builds the three JSON Schema bundles (client, server, http) from the Zod
// source. Used by `pnpm schema` to write them and by the drift test to compare.
import type { ZodTypeAny } from "zod/v3";
import { ignoreOverride, parseDef, zodToJsonSchema } from "zod-to-json-schema";
import {
  AttachmentDescriptor,
  ConversationSummary,
  clientMessageSchemas,
  ErrorBody,
  ErrorDetail,
  Hex32Id,
  HistoryMessage,
  jsonSchemaHints,
  ModelProvider,
  OpaqueId,
  PendingApproval,
  PendingClarification,
  RunState,
  serverMessageSchemas,
  ToolState,
  UploadResponse,
} from "../src/index.js";

type JsonObject = Record<string, unknown>;

/** "conversation.open" → "ConversationOpen"; "error" → "ProtocolError" (avoids kotlin.Error). */
export function definitionName(type: string): string {
  if (type === "error") return "ProtocolError";
  return type
    .split(/[._]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");
}

const sharedDefinitions: Record<string, ZodTypeAny> = {
  AttachmentDescriptor,
  ConversationSummary,
  ErrorDetail,
  Hex32Id,
  HistoryMessage,
  ModelProvider,
  OpaqueId,
  PendingApproval,
  PendingClarification,
  RunState,
  ToolState,
};

function bundle(title: string, description: string, messages: Record<string, ZodTypeAny>, union: boolean) {
  // Leaf definitions first: whichever definition meets a schema first names it.
  const definitions: Record<string, ZodTypeAny> = { ...sharedDefinitions };
  for (const [type, schema] of Object.entries(messages)) definitions[definitionName(type)] = schema;
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
  }) as JsonObject;
  const defs = inlinePathRefs(json.definitions as Record<string, JsonObject>);
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

/** The three bundles, keyed by file name. */
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
    "http.schema.json": bundle(
      "HTTP",
      "HTTP bodies: the attachment descriptor, the upload response and the error body",
      { AttachmentDescriptor, UploadResponse, ErrorBody } as Record<string, ZodTypeAny>,
      false,
    ),
  };
}

/** Serialize a bundle exactly as committed. */
export function serialize(schema: JsonObject): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
