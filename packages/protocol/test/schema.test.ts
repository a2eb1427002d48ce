import { describe, expect, it } from "vitest";
import { buildSchemas, definitionName, pushPayloadName, serialize } from "../scripts/json-schema.js";
import {
  CLIENT_MESSAGE_TYPES,
  EXTENSION_TYPES,
  httpBodySchemas,
  pushPayloadSchemas,
  SERVER_MESSAGE_TYPES,
} from "../src/index.js";
import { committedSchema } from "./helpers.js";

type Def = { title?: string; properties?: { type?: { const?: string } } };

describe("JSON Schema bundles", () => {
  const built = buildSchemas();

  it("covers the 45 message types of the spec and the 51 of the extensions", () => {
    // + activity, modes, inbox, workspaces, changes
    expect(CLIENT_MESSAGE_TYPES).toHaveLength(18 + 12 + 1 + 3 + 3 + 2 + 2);
    // + activity and thoughts, modes, inbox, workspaces, changes
    expect(SERVER_MESSAGE_TYPES).toHaveLength(27 + 13 + 4 + 3 + 2 + 3 + 3);
    expect(Object.keys(EXTENSION_TYPES)).toHaveLength(25 + 5 + 6 + 5 + 5 + 5);
  });

  it.each(Object.keys(built))(
    "%s matches the Zod source (run `pnpm --filter @pheby/protocol schema`)",
    (file) => {
      expect(serialize(committedSchema(file))).toBe(serialize(built[file]!));
    },
  );

  for (const [file, types] of [
    ["client.schema.json", CLIENT_MESSAGE_TYPES],
    ["server.schema.json", SERVER_MESSAGE_TYPES],
  ] as const) {
    it(`${file}: every message is a titled definition with properties.type.const`, () => {
      const schema = committedSchema(file) as {
        oneOf: { $ref: string }[];
        discriminator: unknown;
        definitions: Record<string, Def>;
      };
      expect(schema.discriminator).toEqual({ propertyName: "type" });
      expect(schema.oneOf.map((r) => r.$ref)).toEqual(types.map((t) => `#/definitions/${definitionName(t)}`));
      for (const type of types) {
        const def = schema.definitions[definitionName(type)];
        expect(def, type).toBeDefined();
        // Guards against zod-to-json-schema's silent empty schema (see TOOLCHAIN.md).
        expect(def?.properties?.type?.const, type).toBe(type);
        expect(def?.title).toBe(definitionName(type));
      }
    });
  }

  it("refers to definitions only by name, never by path into another definition", () => {
    for (const schema of Object.values(built)) {
      const refs = JSON.stringify(schema).match(/"\$ref":"[^"]+"/g) ?? [];
      for (const ref of refs) expect(ref).toMatch(/^"\$ref":"#\/definitions\/[A-Za-z0-9]+"$/);
    }
  });

  it("http.schema.json names every HTTP body, and the push payload is a union on kind", () => {
    const defs = (committedSchema("http.schema.json") as { definitions: Record<string, Def> }).definitions;
    expect(Object.keys(defs)).toEqual(expect.arrayContaining(Object.keys(httpBodySchemas)));
    expect(defs.PushPayload).toMatchObject({
      discriminator: { propertyName: "kind" },
      oneOf: Object.keys(pushPayloadSchemas).map((kind) => ({
        $ref: `#/definitions/${pushPayloadName(kind)}`,
      })),
    });
  });

  it("states cross-field rules as required combinations", () => {
    const defs = (committedSchema("client.schema.json") as { definitions: Record<string, Def> }).definitions;
    expect((defs.Hello as { allOf?: unknown }).allOf).toEqual([
      { oneOf: [{ required: ["secret"] }, { required: ["pairing_code"] }] },
    ]);
    expect((defs.ScheduleUpdate as { allOf?: unknown }).allOf).toEqual([
      { not: { required: ["cron", "at"] } },
      {
        anyOf: ["name", "prompt", "cron", "at", "timezone", "enabled", "auto_approve"].map((k) => ({
          required: [k],
        })),
      },
    ]);
  });
});
