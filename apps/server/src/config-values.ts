// How env and YAML spell values (booleans, whole numbers, lists), shared by every part of the
// configuration's schema.
import { z } from "zod/v3";

/** A boolean: YAML's, or true/false, 1/0, yes/no, on/off in any case. */
export const bool = z.union([
  z.boolean(),
  z
    .string()
    .transform((s) => s.trim().toLowerCase())
    .pipe(z.enum(["true", "false", "1", "0", "yes", "no", "on", "off"]))
    .transform((s) => ["true", "1", "yes", "on"].includes(s)),
]);

/** A whole number in `min..max`, from YAML's number or env's digits. */
export const int = (min: number, max: number) =>
  z
    .union([z.number(), z.string().trim().regex(/^\d+$/, "must be a whole number").transform(Number)])
    .pipe(z.number().int().min(min).max(max));

/** A string with something in it besides blanks. */
export const nonEmpty = z.string().trim().min(1);

/** A server default in ms, as the whole seconds this configuration counts in. */
export const seconds = (ms: number) => Math.round(ms / 1000);

/** A list: an array in YAML, one string split on `separator` in env. */
export const list = (separator: string) =>
  z.union([
    z.array(z.string()),
    z.string().transform((s) =>
      s
        .split(separator)
        .map((item) => item.trim())
        .filter(Boolean),
    ),
  ]);
