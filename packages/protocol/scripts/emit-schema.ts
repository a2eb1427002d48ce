// `pnpm --filter @pheby/protocol schema`: regenerate the committed JSON Schema bundles and meta.json.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildSchemas, serialize } from "./json-schema.js";

for (const [file, schema] of Object.entries(buildSchemas())) {
  const path = fileURLToPath(new URL(`../schema/${file}`, import.meta.url));
  writeFileSync(path, serialize(schema));
  console.log(`wrote schema/${file}`);
}
