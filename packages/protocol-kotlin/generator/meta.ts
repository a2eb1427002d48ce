// Turns packages/protocol/schema/meta.json (the protocol's tables: replies and their rules, extensions,
// features, close codes, limits) into Kotlin constants, so the Kotlin client reads them instead of
// keeping copies. Like kotlin.ts it throws on anything it does not expect.
import { GENERATED_HEADER, type JsonSchema, PACKAGE, type SchemaBundles } from "./kotlin.js";

/** The shape of schema/meta.json (see packages/protocol/scripts/meta.ts). */
export interface Meta {
  protocol_version: number;
  reply_rules: string[];
  requests: Record<string, { reply: string; rule: string; alternative?: { reply: string; rule: string } }>;
  no_reply: string[];
  features: string[];
  feature_priority: string[];
  hello_features_sent_max: number;
  extensions: Record<string, { types: string[]; fields: Record<string, string[]> }>;
  close_codes: Record<string, number>;
  error_codes: string[];
  limits: Record<string, number>;
}

/** "goingAway" → "GOING_AWAY"; "delta.append" → "DELTA_APPEND". */
const screaming = (name: string): string =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .toUpperCase();
const str = (value: string): string => JSON.stringify(value).replaceAll("$", "\\$");
const INT_MAX = 2 ** 31 - 1;

/** The Kotlin class of each message type, read from the bundles (the definition whose `type` is that const). */
function classesByType(bundle: JsonSchema): Map<string, string> {
  const classes = new Map<string, string>();
  for (const [name, def] of Object.entries(bundle.definitions ?? {})) {
    const type = def.properties?.type?.const;
    if (typeof type === "string") classes.set(type, name);
  }
  return classes;
}

function ruleConstant(meta: Meta, rule: string): string {
  if (!meta.reply_rules.includes(rule)) throw new Error(`unknown reply rule ${rule}`);
  return `ReplyRule.${screaming(rule)}`;
}

function unique(names: string[], what: string): string[] {
  const ids = names.map(screaming);
  ids.forEach((id, i) => {
    if (!/^[A-Z][A-Z0-9_]*$/.test(id) || ids.indexOf(id) !== i) {
      throw new Error(`${what} ${names[i]} has no unique Kotlin name (${id})`);
    }
  });
  return ids;
}

function intConstant(name: string, value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`${name}: ${value} is not an integer`);
  return Math.abs(value) <= INT_MAX ? `${value}` : `${value}L`;
}

/** `Tables.kt`: every table of meta.json as Kotlin constants. */
export function generateTables(meta: Meta, bundles: SchemaBundles): string {
  const clientClasses = classesByType(bundles.client);
  const serverClasses = classesByType(bundles.server);
  const classOf = (classes: Map<string, string>, type: string): string => {
    const name = classes.get(type);
    if (!name) throw new Error(`no model for message type ${type}`);
    return name;
  };
  const featureIds = unique(meta.features, "feature");
  const featureConst = (feature: string): string => {
    const i = meta.features.indexOf(feature);
    if (i === -1) throw new Error(`unknown feature ${feature}`);
    return `FEATURE_${featureIds[i]}`;
  };
  if ([...meta.feature_priority].sort().join() !== [...meta.features].sort().join()) {
    throw new Error("feature_priority must list every feature exactly once");
  }
  const reply = (type: string, rule: string) =>
    `Reply(${str(type)}, ${classOf(serverClasses, type)}::class, ${ruleConstant(meta, rule)})`;
  const requests = Object.entries(meta.requests).map(([type, r]) => {
    const alt = r.alternative ? `, ${reply(r.alternative.reply, r.alternative.rule)}` : "";
    return `    ${str(type)} to RequestReplies(${classOf(clientClasses, type)}::class, ${reply(r.reply, r.rule)}${alt}),`;
  });
  const extensions = Object.entries(meta.extensions).map(([feature, e]) => {
    const fields = Object.entries(e.fields).map(
      ([type, paths]) => `${str(type)} to listOf(${paths.map(str).join(", ")})`,
    );
    return `    ${featureConst(feature)} to FeatureTables(\n        types = listOf(${e.types.map(str).join(", ")}),\n        fields = mapOf(${fields.join(", ")}),\n    ),`;
  });
  const closeIds = unique(Object.keys(meta.close_codes), "close code");
  const limitIds = unique(Object.keys(meta.limits), "limit");
  const body = `${GENERATED_HEADER}

package ${PACKAGE}

import kotlin.reflect.KClass

/** The protocol version this package speaks (\`hello.protocol_version\`, \`ready.protocol_version\`). */
const val PROTOCOL_VERSION: Int = ${intConstant("protocol_version", meta.protocol_version)}

${meta.features
  .map(
    (f, i) =>
      `/** The \`${f}\` extension's name in \`hello.features\` / \`ready.features\` (docs/protocol.md, Extensions). */\nconst val FEATURE_${featureIds[i]}: String = ${str(f)}\n`,
  )
  .join("\n")}
/** Every feature \`@pheby/protocol\` defines (a server may support fewer; unknown names are ignored). */
val FEATURES: List<String> = listOf(${meta.features.map(featureConst).join(", ")})

/**
 * Every feature, ordered by how much it changes what an app can show first (\`FEATURE_PRIORITY\` of
 * \`@pheby/protocol\`, where the order is explained): a client that must drop names from its \`hello\`
 * keeps the first [HELLO_FEATURES_SENT_MAX] in this order.
 */
val FEATURE_PRIORITY: List<String> = listOf(${meta.feature_priority.map(featureConst).join(", ")})

/**
 * The most names a client puts in \`hello.features\`: earlier servers (0.1.0) accepted at most 16 and
 * close a \`hello\` naming more with 4401, whatever [Limits.HELLO_FEATURES] (what a server accepts) says.
 */
const val HELLO_FEATURES_SENT_MAX: Int = ${intConstant("hello_features_sent_max", meta.hello_features_sent_max)}

/** How a reply leaves the server (docs/protocol.md, "Broadcast rules"). */
enum class ReplyRule(
    /** The rule's name in \`schema/meta.json\` and \`REPLY_RULES\` of \`@pheby/protocol\`. */
    val value: String,
) {
${meta.reply_rules.map((r) => `    ${screaming(r)}(${str(r)}),`).join("\n")}
}

/** A reply message: its [type], its model class and the [rule] it follows. */
data class Reply(val type: String, val messageClass: KClass<out ServerMessage>, val rule: ReplyRule)

/**
 * A request's replies (besides \`error\`, always possible): [reply], and the [alternative] an extension
 * field may bring instead (\`chat.send\` with \`queue\`: \`run.queued\`; \`conversation.open\` with
 * \`since_seq\`: \`conversation.resumed\`).
 */
data class RequestReplies(
    val request: KClass<out ClientMessage>,
    val reply: Reply,
    val alternative: Reply? = null,
)

/** The replies of every request type (\`REPLY_TYPES\`, \`REPLY_RULES\` and their alternatives of \`@pheby/protocol\`). */
val REQUEST_REPLIES: Map<String, RequestReplies> = mapOf(
${requests.join("\n")}
)

/** The client message types that get no reply on success (only an \`error\` on failure). */
val NO_REPLY_TYPES: Set<String> = setOf(${meta.no_reply.map(str).join(", ")})

/** What one feature adds: its message [types] (both directions) and its [fields] by message type (\`a[].b\`: \`b\` of each item of \`a\`). */
data class FeatureTables(val types: List<String>, val fields: Map<String, List<String>>)

/** What each feature adds (\`EXTENSION_TYPES\` and \`EXTENSION_FIELDS\` of \`@pheby/protocol\`, by feature). */
val EXTENSIONS: Map<String, FeatureTables> = mapOf(
${extensions.join("\n")}
)

/** The WebSocket close codes the server uses (\`CLOSE_CODES\` of \`@pheby/protocol\`; docs/protocol.md, "Handshake and close codes"). */
object CloseCodes {
${Object.entries(meta.close_codes)
  .map(
    ([name, code], i) =>
      `    /** \`CLOSE_CODES.${name}\`. */\n    const val ${closeIds[i]}: Int = ${intConstant(name, code)}`,
  )
  .join("\n\n")}
}

/** The limits of \`LIMITS\` of \`@pheby/protocol\` (docs/protocol.md, "Limits"). */
object Limits {
${Object.entries(meta.limits)
  .map(([name, value], i) => {
    const type = Math.abs(value) <= INT_MAX ? "Int" : "Long";
    return `    /** \`LIMITS.${name}\`. */\n    const val ${limitIds[i]}: ${type} = ${intConstant(name, value)}`;
  })
  .join("\n\n")}
}
`;
  return body;
}
