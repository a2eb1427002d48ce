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

/** An array whose items must be distinct (emitted as JSON Schema `uniqueItems`). */
export function uniqueArray<T extends z.ZodTypeAny>(item: T, max: number) {
  const array = z.array(item).max(max);
  const schema = array.refine((items) => new Set(items).size === items.length, "must not contain duplicates");
  jsonSchemaHints.set(array, { uniqueItems: true });
  return schema;
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
