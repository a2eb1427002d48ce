import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { Ajv as AjvClass } from "ajv";
import type { FormatsPlugin } from "ajv-formats";

// ajv and ajv-formats are CommonJS; require() gives their real exports under NodeNext.
const require = createRequire(import.meta.url);
const Ajv: typeof AjvClass = require("ajv");
const addFormats: FormatsPlugin = require("ajv-formats");

export const root = fileURLToPath(new URL("..", import.meta.url));

/** Every JSON file of a fixture folder, as [name, value]. */
export function fixtures(dir: string): [string, unknown][] {
  const path = `${root}fixtures/${dir}`;
  return readdirSync(path)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => [f.replace(/\.json$/, ""), JSON.parse(readFileSync(`${path}/${f}`, "utf8"))]);
}

/** The committed JSON Schema bundle. */
export function committedSchema(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${root}schema/${file}`, "utf8"));
}

/** An ajv validator for a committed bundle; `definition` picks one named definition. */
export function ajvFor(file: string, definition?: string) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const schema = committedSchema(file);
  ajv.addSchema(schema, file);
  return ajv.getSchema(definition ? `${file}#/definitions/${definition}` : file)!;
}
