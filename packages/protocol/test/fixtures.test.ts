import { describe, expect, it } from "vitest";
import {
  CLIENT_MESSAGE_TYPES,
  ClientMessage,
  decodeClientFrame,
  decodeServerFrame,
  httpBodySchemas,
  SERVER_MESSAGE_TYPES,
  ServerMessage,
} from "../src/index.js";
import { ajvFor, fixtures } from "./helpers.js";

const directions = [
  { dir: "client", union: ClientMessage, file: "client.schema.json", types: CLIENT_MESSAGE_TYPES },
  { dir: "server", union: ServerMessage, file: "server.schema.json", types: SERVER_MESSAGE_TYPES },
] as const;

describe.each(directions)("valid $dir fixtures", ({ dir, union, file, types }) => {
  const corpus = fixtures(`valid/${dir}`);
  const validate = ajvFor(file);

  it("include at least one example of every message type", () => {
    const covered = new Set(corpus.map(([, v]) => (v as { type: string }).type));
    for (const type of types) expect(covered.has(type), type).toBe(true);
  });

  it.each(corpus)("%s is accepted by Zod and by the JSON Schema", (name, value) => {
    expect(name.startsWith((value as { type: string }).type), "file name starts with the type").toBe(true);
    const zod = union.safeParse(value);
    expect(zod.success, JSON.stringify(zod.error?.issues)).toBe(true);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  });
});

// File names start with the definition: `PushPayload.approval.json` is a PushPayload.
const httpDefinition = (name: string) => name.split(".")[0] as keyof typeof httpBodySchemas;

describe("valid http fixtures", () => {
  const corpus = fixtures("valid/http");

  it("include at least one example of every HTTP body and push payload kind", () => {
    const names = new Set(corpus.map(([name]) => httpDefinition(name)));
    for (const definition of Object.keys(httpBodySchemas))
      expect(names.has(definition as never), definition).toBe(true);
    const payloads = corpus.filter(([name]) => httpDefinition(name) === "PushPayload");
    const kinds = new Set(payloads.map(([, v]) => (v as { kind: string }).kind));
    expect([...kinds].sort()).toEqual([
      "approval",
      "clarify",
      "message",
      "resolved",
      "run_finished",
      "schedule",
      "test",
    ]);
  });

  it.each(corpus)("%s is accepted by Zod and by the JSON Schema", (name, value) => {
    const definition = httpDefinition(name);
    const zod = httpBodySchemas[definition].safeParse(value);
    expect(zod.success, JSON.stringify(zod.error?.issues)).toBe(true);
    const validate = ajvFor("http.schema.json", definition);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  });
});

describe("invalid http fixtures", () => {
  it.each(fixtures("invalid/http"))("%s is rejected by Zod and by the JSON Schema alike", (name, value) => {
    const { body } = value as { body: unknown };
    const definition = httpDefinition(name);
    expect(httpBodySchemas[definition].safeParse(body).success).toBe(false);
    expect(ajvFor("http.schema.json", definition)(body)).toBe(false);
  });
});

/**
 * `features`: the features the connection enabled (none when absent, like `decodeClientFrame(raw)`).
 * `needs_feature`: the frame is valid with that feature and refused only because it is not enabled.
 */
type InvalidClient = {
  raw?: string;
  frame?: unknown;
  expected_code: string;
  features?: string[];
  needs_feature?: string;
};

describe("invalid client fixtures", () => {
  const validate = ajvFor("client.schema.json");
  it.each(fixtures("invalid/client"))("%s decodes to its expected error code", (_name, value) => {
    const fixture = value as InvalidClient;
    const raw = fixture.raw ?? JSON.stringify(fixture.frame);
    const result = fixture.features
      ? decodeClientFrame(raw, { features: fixture.features })
      : decodeClientFrame(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe(fixture.expected_code);
  });

  it.each(fixtures("invalid/client"))(
    "%s is rejected by Zod and by the JSON Schema alike (or, needing a feature, accepted with it)",
    (_name, value) => {
      const fixture = value as InvalidClient;
      if (fixture.raw !== undefined && fixture.expected_code === "invalid_json") return;
      const frame = fixture.frame ?? JSON.parse(fixture.raw!);
      const valid = fixture.needs_feature !== undefined;
      expect(ClientMessage.safeParse(frame).success).toBe(valid);
      expect(validate(frame)).toBe(valid);
      if (valid) {
        const features = [...(fixture.features ?? []), fixture.needs_feature!];
        expect(decodeClientFrame(JSON.stringify(frame), { features }).ok).toBe(true);
      }
    },
  );
});

describe("invalid server fixtures", () => {
  const validate = ajvFor("server.schema.json");
  it.each(fixtures("invalid/server"))(
    "%s is rejected by Zod and by the JSON Schema alike",
    (_name, value) => {
      const { frame } = value as { frame: unknown };
      expect(ServerMessage.safeParse(frame).success).toBe(false);
      expect(validate(frame)).toBe(false);
    },
  );
});

type FutureServer = { frame: Record<string, unknown>; strict_decode: string };

// Frames from a newer server (new type, new enum values, new fields). The Kotlin models decode all of
// them (packages/protocol-kotlin); v1's strict decoder accepts only the added fields, and this pins
// exactly what a TypeScript client gets for each (see docs/kotlin.md, "Forward compatibility").
describe("future server fixtures", () => {
  const validate = ajvFor("server.schema.json");
  it.each(fixtures("future/server"))("%s: decodeServerFrame gives strict_decode", (_name, value) => {
    const { frame, strict_decode } = value as FutureServer;
    const result = decodeServerFrame(JSON.stringify(frame));
    if (strict_decode === "ok") {
      expect(result.ok).toBe(true);
      // The tolerant reader drops the added fields (all named x_*).
      if (result.ok) expect(JSON.stringify(result.message)).not.toContain('"x_');
    } else {
      expect(result.ok ? "ok" : result.error.code).toBe(strict_decode);
    }
    expect(validate(frame)).toBe(strict_decode === "ok");
  });
});
