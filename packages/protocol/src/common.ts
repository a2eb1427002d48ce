import { z } from "zod/v3";
import { LIMITS } from "./constants.js";

// Building blocks shared by the message modules. Zod is imported as "zod/v3"
// on purpose: zod-to-json-schema silently emits empty schemas for Zod 4.

/** An ISO-8601 UTC timestamp. */
export const Timestamp = z.string().datetime({ offset: true }).describe("ISO-8601 UTC timestamp");

/** The optional client-chosen correlation ID; direct replies echo it. */
export const RequestId = z
  .string()
  .max(LIMITS.requestIdChars)
  .describe("Client-chosen correlation ID, echoed on the direct reply");

/** An opaque ID sent by the client (conversation, run, approval, ...). */
export const OpaqueId = z.string().min(1).max(LIMITS.idChars);

/** A server-generated 32-hex ID (conversations and attachments). */
export const Hex32Id = z.string().regex(/^[0-9a-f]{32}$/, "must be 32 lowercase hex characters");

/** Shape shared by every client request: its `type` plus an optional `request_id`. */
export function request<T extends string, S extends z.ZodRawShape>(type: T, shape: S, description: string) {
  return z
    .object({ type: z.literal(type), request_id: RequestId.optional(), ...shape })
    .describe(description);
}

/** Shape shared by every server message: its `type`, plus `request_id` on direct replies. */
export function event<T extends string, S extends z.ZodRawShape>(type: T, shape: S, description: string) {
  return z
    .object({ type: z.literal(type), request_id: RequestId.optional(), ...shape })
    .describe(description);
}

/**
 * A position in a conversation's event log (`resume`): a non-negative integer that only grows,
 * within JavaScript's safe integers so every client reads it exactly.
 */
export const Seq = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * A server message that belongs to one conversation (it has a `conversation_id`): with the `resume`
 * feature it also carries `seq`, the conversation's log position it reflects (docs/protocol.md).
 */
export function conversationEvent<T extends string, S extends z.ZodRawShape>(
  type: T,
  shape: S,
  description: string,
) {
  return event(
    type,
    {
      ...shape,
      seq: Seq.optional().describe(
        "Only with the resume feature: this conversation's event position (an event's own, or the latest one a reply reflects)",
      ),
    },
    description,
  );
}

/** True when the string has at least one non-whitespace character. */
export const nonBlank = (s: string) => s.trim().length > 0;

/** Length in Unicode code points (what the spec's "chars" means, as in the Python original). */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * Text bounded in Unicode code points. Zod's own `.max()` counts UTF-16 units,
 * which disagrees with JSON Schema's `maxLength` (code points), so the bound is
 * a refinement here and the JSON Schema emitter writes `maxLength` from
 * {@link textBounds}. An overlong value fails with `too_large` when `tooLarge`
 * is set (the spec's code for chat text), `bad_request` otherwise.
 */
export function boundedText(opts: { max: number; nonBlank?: boolean; tooLarge?: boolean }) {
  const schema = z.string().superRefine((s, ctx) => {
    if (opts.nonBlank && !nonBlank(s)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: "must not be blank" });
    }
    if (codePointLength(s) > opts.max) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `must be at most ${opts.max} characters`,
        params: { phebyCode: opts.tooLarge ? "too_large" : "bad_request" },
      });
    }
  });
  jsonSchemaHints.set(schema._def.schema, { maxLength: opts.max, nonBlank: opts.nonBlank ?? false });
  return schema;
}

/** An array whose items must be distinct (emitted as JSON Schema `uniqueItems`), with `min`..`max` items. */
export function uniqueArray<T extends z.ZodTypeAny>(item: T, max: number, min = 0) {
  const array = min > 0 ? z.array(item).min(min).max(max) : z.array(item).max(max);
  const schema = array.refine((items) => new Set(items).size === items.length, "must not contain duplicates");
  jsonSchemaHints.set(array, { uniqueItems: true });
  return schema;
}

/**
 * A rule across the fields of one object, which no single field can express. A field counts as
 * present when its key is there (an explicit `null` is present). JSON Schema gets the same rule as
 * `required` combinations, so Zod, JSON Schema and the Kotlin models agree.
 */
export type FieldRule =
  /** Exactly one of the two; `missing` says where and how to report neither (default: "a or b is required" at a). */
  | { kind: "exactlyOne"; keys: readonly [string, string]; missing?: string }
  /** Not both. */
  | { kind: "atMostOne"; keys: readonly [string, string] }
  /** At least one of them. */
  | { kind: "atLeastOne"; keys: readonly string[] };

const present = (value: Record<string, unknown>, key: string) => value[key] !== undefined;

/** Add an issue for every broken {@link FieldRule}; messages name fields, never values. */
export function checkFieldRules(
  value: Record<string, unknown>,
  rules: readonly FieldRule[],
  ctx: z.RefinementCtx,
) {
  for (const rule of rules) {
    const count = rule.keys.filter((k) => present(value, k)).length;
    if (rule.kind !== "atLeastOne" && count === 2) {
      const [first, second] = rule.keys;
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: [second],
        message: `must not be sent with ${first}`,
      });
    } else if (rule.kind === "exactlyOne" && count === 0) {
      const message = rule.missing ?? `or ${rule.keys[1]} is required`;
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: [rule.keys[0]], message });
    } else if (rule.kind === "atLeastOne" && count === 0) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `needs at least one of: ${rule.keys.join(", ")}`,
      });
    }
  }
}

/**
 * An object schema with cross-field {@link FieldRule}s. The result is a refinement of `object`; message
 * unions use `object` itself (a discriminated union takes plain objects) and apply the rules on top.
 */
export function withFieldRules<T extends z.AnyZodObject>(
  object: T,
  rules: readonly FieldRule[],
): z.ZodEffects<T, z.output<T>, z.input<T>> {
  fieldRulesByDef.set(object._def, rules);
  return object.superRefine((value, ctx) => checkFieldRules(value, rules, ctx));
}

// Keyed by the object's definition, which is what the JSON Schema emitter sees.
const fieldRulesByDef = new WeakMap<object, readonly FieldRule[]>();

/**
 * The {@link FieldRule}s of an object schema given to {@link withFieldRules}: pass the object, its
 * refinement, or the object's `_def`. Undefined when it has none.
 */
export function fieldRulesOf(schema: z.ZodTypeAny | z.ZodTypeDef): readonly FieldRule[] | undefined {
  if (schema instanceof z.ZodEffects) return fieldRulesOf(schema.innerType());
  return fieldRulesByDef.get(schema instanceof z.ZodType ? schema._def : schema);
}

/**
 * What a refinement means in JSON Schema terms, keyed by the refined inner
 * schema (which survives `.describe()` and `.optional()` copies). The JSON
 * Schema emitter reads it; refinements are otherwise invisible to it.
 */
export const jsonSchemaHints = new WeakMap<
  object,
  { maxLength: number; nonBlank: boolean } | { uniqueItems: true }
>();

const encoder = new TextEncoder();

/** Length of a string in UTF-8 bytes. */
export function utf8ByteLength(s: string): number {
  return encoder.encode(s).byteLength;
}

/**
 * Text bounded in UTF-8 bytes (a diff's patch). JSON Schema cannot count bytes, so it states the same
 * number as `maxLength` (code points), a bound every valid value meets.
 */
export function boundedBytes(max: number) {
  const schema = z.string().superRefine((s, ctx) => {
    // A string of at most max/3 UTF-16 units is at most max bytes: skip the encoding then.
    if (s.length > max / 3 && utf8ByteLength(s) > max) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be at most ${max} bytes of UTF-8` });
    }
  });
  jsonSchemaHints.set(schema._def.schema, { maxLength: max, nonBlank: false });
  return schema;
}
