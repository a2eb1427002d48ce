// `pnpm --filter @pheby/protocol-kotlin generate`: regenerate the committed Kotlin models from the
// committed JSON Schema, and their constants (Tables.kt) from the committed meta.json. With `--check`, write nothing and fail if the committed sources drifted.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GENERATED_HEADER, generateKotlin, type JsonSchema } from "./kotlin.js";
import { generateTables, type Meta } from "./meta.js";

const schemaDir = fileURLToPath(new URL("../../protocol/schema/", import.meta.url));
const outDir = fileURLToPath(new URL("../src/main/kotlin/dev/pheby/protocol/", import.meta.url));
const readSchema = (name: string): JsonSchema =>
  JSON.parse(readFileSync(join(schemaDir, `${name}.schema.json`), "utf8")) as JsonSchema;

const bundles = { client: readSchema("client"), server: readSchema("server"), http: readSchema("http") };
const meta = JSON.parse(readFileSync(join(schemaDir, "meta.json"), "utf8")) as Meta;
const files = { ...generateKotlin(bundles), "Tables.kt": generateTables(meta, bundles) };
// Generated files carry the header; hand-written support files (PhebyJson.kt, OptionalNullable.kt) do not.
const committed = readdirSync(outDir).filter(
  (name) => name.endsWith(".kt") && readFileSync(join(outDir, name), "utf8").startsWith(GENERATED_HEADER),
);

if (process.argv.includes("--check")) {
  const read = (name: string) =>
    committed.includes(name) ? readFileSync(join(outDir, name), "utf8") : undefined;
  const drifted = [
    ...Object.entries(files)
      .filter(([name, text]) => read(name) !== text)
      .map(([name]) => name),
    ...committed.filter((name) => !(name in files)),
  ];
  if (drifted.length > 0) {
    console.error(
      `Kotlin sources drifted from packages/protocol/schema: ${drifted.join(", ")}.\n` +
        "Run `pnpm --filter @pheby/protocol-kotlin generate` and commit the result.",
    );
    process.exit(1);
  }
  console.log(
    `Kotlin models match the JSON Schema and meta.json (${Object.keys(files).length} generated files)`,
  );
} else {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(outDir, name), text);
  console.log(`wrote ${Object.keys(files).join(", ")} to src/main/kotlin/dev/pheby/protocol`);
}
