import { describe, expect, it } from "vitest";
import {
  AttachmentDescriptor,
  CLIENT_MESSAGE_TYPES,
  ClientMessage,
  decodeClientFrame,
  decodeServerFrame,
  ErrorBody,
  SERVER_MESSAGE_TYPES,
  ServerMessage,
  UploadResponse,
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

describe("valid http fixtures", () => {
  const schemas = { AttachmentDescriptor, UploadResponse, ErrorBody } as const;
  it.each(fixtures("valid/http"))("%s is accepted by Zod and by the JSON Schema", (name, value) => {
    const definition = name.split(".")[0] as keyof typeof schemas;
    expect(schemas[definition].safeParse(value).success).toBe(true);
    const validate = ajvFor("http.schema.json", definition);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  });
});

type InvalidClient = { raw?: string; frame?: unknown; expected_code: string };

describe("invalid client fixtures", () => {
  const validate = ajvFor("client.schema.json");
  it.each(fixtures("invalid/client"))("%s decodes to its expected error code", (_name, value) => {
    const fixture = value as InvalidClient;
    const raw = fixture.raw ?? JSON.stringify(fixture.frame);
    const result = decodeClientFrame(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe(fixture.expected_code);
  });

  it.each(fixtures("invalid/client"))(
    "%s is rejected by Zod and by the JSON Schema alike",
    (_name, value) => {
      const fixture = value as InvalidClient;
      if (fixture.raw !== undefined && fixture.expected_code === "invalid_json") return;
      const frame = fixture.frame ?? JSON.parse(fixture.raw!);
      expect(ClientMessage.safeParse(frame).success).toBe(false);
      expect(validate(frame)).toBe(false);
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
