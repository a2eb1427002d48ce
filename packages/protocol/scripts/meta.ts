// Builds schema/meta.json: the protocol's tables (replies and their rules, extensions, features, close
// codes, limits) as data, for code generators in other languages (the Kotlin constants). Written by
// `pnpm schema` beside the JSON Schema bundles and compared by the same drift test.
import {
  ALTERNATIVE_REPLY_RULES,
  ALTERNATIVE_REPLY_TYPES,
  CLOSE_CODES,
  ERROR_CODES,
  EXTENSION_FIELDS,
  EXTENSION_TYPES,
  FEATURE_PRIORITY,
  FEATURES,
  HELLO_FEATURES_SENT_MAX,
  LIMITS,
  NO_REPLY_TYPES,
  PROTOCOL_VERSION,
  REPLY_RULE_NAMES,
  REPLY_RULES,
  REPLY_TYPES,
  type RequestType,
} from "../src/index.js";

/** One request's replies: the reply type and its rule, and the other reply an extension field may bring. */
export interface MetaRequest {
  reply: string;
  rule: string;
  alternative?: { reply: string; rule: string };
}

/** What one feature adds: its message types (either direction) and its fields, by message type. */
export interface MetaExtension {
  types: string[];
  fields: Record<string, string[]>;
}

/** The shape of schema/meta.json. */
export interface Meta {
  $comment: string;
  protocol_version: number;
  reply_rules: string[];
  requests: Record<string, MetaRequest>;
  no_reply: string[];
  features: string[];
  feature_priority: string[];
  hello_features_sent_max: number;
  extensions: Record<string, MetaExtension>;
  close_codes: Record<string, number>;
  error_codes: string[];
  limits: Record<string, number>;
}

/** The tables of `@pheby/protocol`, as the JSON object committed in schema/meta.json. */
export function buildMeta(): Meta {
  const requests: Record<string, MetaRequest> = {};
  for (const type of Object.keys(REPLY_TYPES) as RequestType[]) {
    const entry: MetaRequest = { reply: REPLY_TYPES[type], rule: REPLY_RULES[type] };
    if (Object.hasOwn(ALTERNATIVE_REPLY_TYPES, type)) {
      const alt = type as keyof typeof ALTERNATIVE_REPLY_TYPES;
      entry.alternative = { reply: ALTERNATIVE_REPLY_TYPES[alt], rule: ALTERNATIVE_REPLY_RULES[alt] };
    }
    requests[type] = entry;
  }
  const extensions: Record<string, MetaExtension> = {};
  for (const feature of FEATURES) extensions[feature] = { types: [], fields: {} };
  for (const [type, feature] of Object.entries(EXTENSION_TYPES)) extensions[feature]!.types.push(type);
  for (const [type, fields] of Object.entries(EXTENSION_FIELDS)) {
    for (const [path, feature] of Object.entries(fields as Record<string, string>)) {
      const own = extensions[feature]!.fields;
      own[type] = [...(own[type] ?? []), path];
    }
  }
  return {
    $comment:
      "Generated from @pheby/protocol's source by `pnpm --filter @pheby/protocol schema`; do not edit. Reply rules: see REPLY_RULE_NAMES and docs/protocol.md, Broadcast rules.",
    protocol_version: PROTOCOL_VERSION,
    reply_rules: [...REPLY_RULE_NAMES],
    requests,
    no_reply: [...NO_REPLY_TYPES],
    features: [...FEATURES],
    feature_priority: [...FEATURE_PRIORITY],
    hello_features_sent_max: HELLO_FEATURES_SENT_MAX,
    extensions,
    close_codes: { ...CLOSE_CODES },
    error_codes: [...ERROR_CODES],
    limits: { ...LIMITS },
  };
}
