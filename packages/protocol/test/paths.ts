import { z } from "zod/v3";

/**
 * Every field path of a Zod schema, as the feature table spells them: `a`, `a.b` for a nested object,
 * `a[].b` for an object inside an array. Records (free-form objects such as `args_redacted`) end a path.
 */
export function schemaPaths(schema: z.ZodTypeAny, prefix = ""): string[] {
  if (schema instanceof z.ZodEffects) return schemaPaths(schema.innerType(), prefix);
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    return schemaPaths(schema.unwrap(), prefix);
  }
  if (schema instanceof z.ZodArray) return schemaPaths(schema.element, `${prefix}[]`);
  if (schema instanceof z.ZodDiscriminatedUnion) {
    return [...new Set((schema.options as z.ZodTypeAny[]).flatMap((o) => schemaPaths(o, prefix)))];
  }
  if (schema instanceof z.ZodObject) {
    return Object.entries(schema.shape as Record<string, z.ZodTypeAny>).flatMap(([key, value]) => {
      const path = prefix ? `${prefix}.${key}` : key;
      return [path, ...schemaPaths(value, path)];
    });
  }
  return [];
}
