import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  CLIENT_MESSAGE_TYPES,
  ClientMessage,
  ERROR_CODES,
  httpBodySchemas,
  SERVER_MESSAGE_TYPES,
  ServerMessage,
} from "../src/index.js";
import { root } from "./helpers.js";

// docs/protocol.md is hand-written prose; this keeps it honest against the schemas.
const doc = readFileSync(`${root}../../docs/protocol.md`, "utf8");

describe("docs/protocol.md", () => {
  it("has a section for every message type (the 45 of v1 and the extensions')", () => {
    for (const type of [...CLIENT_MESSAGE_TYPES, ...SERVER_MESSAGE_TYPES]) {
      expect(doc, type).toContain(`#### \`${type}\``);
    }
  });

  it("lists all 15 error codes", () => {
    for (const code of ERROR_CODES) expect(doc, code).toMatch(new RegExp(`\\| +\`${code}\` +\\|`));
  });

  const blocks = [...doc.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
  it.each(blocks.map((b, i) => [i, b] as const))(
    "JSON example %i is valid under the schemas",
    (_i, block) => {
      const value = JSON.parse(block);
      const ok = [ClientMessage, ServerMessage, ...Object.values(httpBodySchemas)].some(
        (s) => s.safeParse(value).success,
      );
      expect(ok, block).toBe(true);
    },
  );
});
