import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ZodTypeAny } from "zod/v3";
import {
  CLIENT_MESSAGE_TYPES,
  checkFeatures,
  clientMessageSchemas,
  decodeClientFrame,
  decodeServerFrame,
  EXTENSION_FIELDS,
  EXTENSION_TYPES,
  extensionFieldsOf,
  extensionsUsed,
  FEATURES,
  featureOfType,
  SERVER_MESSAGE_TYPES,
  serverMessageSchemas,
} from "../src/index.js";
import { fixtures, root } from "./helpers.js";
import { schemaPaths } from "./paths.js";

type Frame = Record<string, unknown> & { type: string };
const schemas: Record<string, ZodTypeAny> = { ...clientMessageSchemas, ...serverMessageSchemas };
const clientFixtures = fixtures("valid/client") as [string, Frame][];
const serverFixtures = fixtures("valid/server") as [string, Frame][];
const without = (features: readonly string[], feature: string) => features.filter((f) => f !== feature);
const json = (frame: unknown) => JSON.stringify(frame);
const conv = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

// The field paths of every v1 message, recorded from the schemas before any extension but delta.append
// existed (delta.append's `offset` is listed as an extension field, not here).
const v1Fields: Record<string, string[]> = JSON.parse(readFileSync(`${root}test/v1-fields.json`, "utf8"));

describe("the feature table", () => {
  it("names only defined features, and every feature has a message type or a field", () => {
    const used = new Set([
      ...Object.values(EXTENSION_TYPES),
      ...Object.values(EXTENSION_FIELDS).flatMap((fields) => Object.values(fields)),
    ]);
    expect([...used].sort()).toEqual([...FEATURES].sort());
  });

  it("lists every message type that is not v1, and only those", () => {
    const all = [...CLIENT_MESSAGE_TYPES, ...SERVER_MESSAGE_TYPES];
    expect(all.filter((t) => !(t in v1Fields)).sort()).toEqual(Object.keys(EXTENSION_TYPES).sort());
    expect(Object.keys(v1Fields).filter((t) => featureOfType(t))).toEqual([]);
  });

  it("lists every field added to a v1 message: what is left of each schema is exactly v1", () => {
    for (const [type, fields] of Object.entries(v1Fields)) {
      const extension = extensionFieldsOf(type).map(([path]) => path);
      // A field inside an extension field (ready.push.vapid_public_key) is the extension's too.
      const isExtension = (p: string) =>
        extension.some((e) => p === e || p.startsWith(`${e}.`) || p.startsWith(`${e}[]`));
      const paths = schemaPaths(schemas[type]!).filter((p) => p !== "type" && !isExtension(p));
      expect(paths.sort(), type).toEqual(fields);
    }
  });

  it("names fields the schemas have", () => {
    for (const [type, fields] of Object.entries(EXTENSION_FIELDS)) {
      const paths = new Set(schemaPaths(schemas[type]!));
      for (const path of Object.keys(fields)) expect(paths.has(path), `${type}.${path}`).toBe(true);
    }
  });

  // conversation.status is about the list, not an open conversation: not in the replay log.
  const unlogged = ["conversation.resumed", "conversation.status"];
  it("gives seq (resume) to every server message with a conversation_id, except conversation.resumed and .status", () => {
    for (const type of SERVER_MESSAGE_TYPES) {
      const hasConversation = schemaPaths(serverMessageSchemas[type]).includes("conversation_id");
      const seq = extensionFieldsOf(type).find(([path]) => path === "seq");
      expect(seq?.[1], type).toBe(hasConversation && !unlogged.includes(type) ? "resume" : undefined);
    }
  });

  it("has a valid fixture for every extension type and every extension field", () => {
    const corpus = [...clientFixtures, ...serverFixtures].map(([, f]) => f);
    for (const type of Object.keys(EXTENSION_TYPES)) {
      expect(
        corpus.some((f) => f.type === type),
        type,
      ).toBe(true);
    }
    for (const [type, fields] of Object.entries(EXTENSION_FIELDS)) {
      for (const path of Object.keys(fields)) {
        const covered = corpus.some(
          (f) => f.type === type && checkFeatures(f, without(extensionsUsed(f), fields[path as never]!)),
        );
        expect(covered, `${type} ${path}`).toBe(true);
      }
    }
  });
});

describe("decodeClientFrame gating", () => {
  it.each(clientFixtures)(
    "%s: decodes with its features, and without each one as v1 would",
    (_name, frame) => {
      const used = extensionsUsed(frame);
      const full = decodeClientFrame(json(frame), { features: used });
      expect(full.ok, json(full)).toBe(true);
      if (full.ok) expect(extensionsUsed(full.message)).toEqual(used);
      for (const feature of used) {
        const less = decodeClientFrame(json(frame), { features: without(used, feature) });
        if (featureOfType(frame.type) === feature) {
          expect(less).toMatchObject({
            ok: false,
            error: { code: "unknown_type", message: "unknown message type" },
          });
        } else if (less.ok) {
          expect(extensionsUsed(less.message)).not.toContain(feature);
        } else {
          // Only a pairing hello depends on its extension field: without devices it has no secret.
          expect([frame.type, less.error.message]).toEqual(["hello", "secret is required"]);
        }
      }
    },
  );

  it("without options decodes as v1: a chat.send with client_message_id and queue is a plain v1 chat.send", () => {
    const frame = {
      type: "chat.send",
      conversation_id: conv,
      text: "hi",
      client_message_id: "m1",
      queue: true,
    };
    const v1 = { type: "chat.send", conversation_id: conv, text: "hi" };
    expect(decodeClientFrame(json(frame))).toEqual({ ok: true, message: v1 });
    expect(decodeClientFrame(json(frame), { features: [] })).toEqual({ ok: true, message: v1 });
    expect(decodeClientFrame(json(frame), { features: ["delta.append"] })).toEqual({ ok: true, message: v1 });
    expect(decodeClientFrame(json(frame), { features: ["queue"] })).toEqual({
      ok: true,
      message: { ...v1, queue: true },
    });
    expect(decodeClientFrame(json(frame), { features: new Set(["resume", "queue", "x-unknown"]) })).toEqual({
      ok: true,
      message: frame,
    });
  });

  it("ignores a malformed extension field of a feature not enabled, like any unknown field", () => {
    const frame = {
      type: "chat.send",
      conversation_id: conv,
      text: "hi",
      client_message_id: 42,
      queue: "yes",
    };
    expect(decodeClientFrame(json(frame)).ok).toBe(true);
    expect(decodeClientFrame(json(frame), { features: ["resume"] })).toMatchObject({
      ok: false,
      error: { code: "bad_request", message: "client_message_id must be string" },
    });
  });

  it("answers an extension request of a feature not enabled exactly like an unknown type", () => {
    const unknown = decodeClientFrame(json({ type: "no.such.type", request_id: "r1" }));
    for (const type of Object.keys(EXTENSION_TYPES).filter((t) => t in clientMessageSchemas)) {
      const feature = featureOfType(type)!;
      const others = FEATURES.filter((f) => f !== feature);
      expect(decodeClientFrame(json({ type, request_id: "r1" }), { features: others }), type).toEqual(
        unknown,
      );
      expect(decodeClientFrame(json({ type, request_id: "r1" })), type).toEqual(unknown);
    }
  });

  describe("hello", () => {
    const pairing = {
      type: "hello",
      protocol_version: 1,
      pairing_code: "Qx7pZ2mK9vR4tW8yB3nD6f",
      device_name: "Pixel",
    };

    it("a v1 hello without secret fails exactly as before, with or without the devices feature", () => {
      const v1 = decodeClientFrame(json({ type: "hello", protocol_version: 1, request_id: "h" }));
      expect(v1).toEqual({
        ok: false,
        error: { code: "bad_request", message: "secret is required", request_id: "h" },
      });
      const devices = { features: ["devices"] };
      expect(
        decodeClientFrame(json({ type: "hello", protocol_version: 1, request_id: "h" }), devices),
      ).toEqual(v1);
    });

    it("a pairing hello counts only when the server supports devices and the hello asks for it", () => {
      const asks = { ...pairing, features: ["devices"] };
      expect(decodeClientFrame(json(asks), { features: ["devices", "push"] })).toEqual({
        ok: true,
        message: asks,
      });
      // The server does not support devices (today's server), or the hello does not ask for it.
      const missing = { ok: false, error: { code: "bad_request", message: "secret is required" } };
      expect(decodeClientFrame(json(asks))).toEqual(missing);
      expect(decodeClientFrame(json(asks), { features: ["delta.append"] })).toEqual(missing);
      expect(decodeClientFrame(json(pairing), { features: ["devices"] })).toEqual(missing);
      expect(
        decodeClientFrame(json({ ...pairing, features: ["push"] }), { features: ["devices", "push"] }),
      ).toEqual(missing);
    });

    it("a hello with both secret and pairing_code, or neither, is bad_request with devices", () => {
      const devices = { features: ["devices"] };
      const both = { ...pairing, secret: "s", features: ["devices"] };
      expect(decodeClientFrame(json(both), devices)).toEqual({
        ok: false,
        error: { code: "bad_request", message: "pairing_code must not be sent with secret" },
      });
      const neither = { type: "hello", protocol_version: 1, features: ["devices"], device_name: "Pixel" };
      expect(decodeClientFrame(json(neither), devices)).toMatchObject({
        error: { message: "secret is required" },
      });
      // Without devices both is a v1 hello with a secret (pairing_code is an unknown field there).
      expect(decodeClientFrame(json(both))).toMatchObject({ ok: true, message: { secret: "s" } });
    });

    it("never echoes a pairing code or a secret in an error", () => {
      const frames = [
        { ...pairing, pairing_code: "short-code-hunter2", features: ["devices"] },
        { ...pairing, secret: "hunter2-secret", features: ["devices"] },
      ];
      for (const frame of frames) {
        const r = decodeClientFrame(json(frame), { features: ["devices"] });
        expect(r.ok).toBe(false);
        expect(JSON.stringify(r)).not.toContain("hunter2");
      }
    });
  });
});

describe("server frames: decodeServerFrame({ features }) and checkFeatures", () => {
  it.each(serverFixtures)("%s: accepted with its features, refused without each one", (_name, frame) => {
    const used = extensionsUsed(frame);
    expect(decodeServerFrame(json(frame)).ok).toBe(true); // no options: no feature check
    expect(decodeServerFrame(json(frame), { features: used }).ok).toBe(true);
    expect(checkFeatures(frame, used)).toBeUndefined();
    for (const feature of used) {
      const less = decodeServerFrame(json({ ...frame, request_id: "r9" }), {
        features: without(used, feature),
      });
      expect(less.ok).toBe(false);
      if (less.ok) continue;
      expect(less.error.request_id).toBe("r9");
      expect(less.error.code).toBe(featureOfType(frame.type) === feature ? "unknown_type" : "bad_request");
      expect(less.error.message).toContain(`the ${feature} feature`);
    }
  });

  it("names the feature and the field, also inside arrays, and counts a null field as present", () => {
    const history = serverFixtures.find(([n]) => n === "conversation.history.extensions")![1];
    expect(checkFeatures(history, ["resume", "queue"])).toEqual({
      code: "bad_request",
      message: "approvals[].expires_at belongs to the expiry feature, which this connection did not enable",
    });
    const request = serverFixtures.find(([n]) => n === "clarify.request.expiry")![1];
    expect(request.expires_at).toBeNull();
    expect(extensionsUsed(request)).toEqual(["expiry"]);
    expect(checkFeatures({ type: "push.tested" }, ["delta.append"])).toEqual({
      code: "unknown_type",
      message: "push.tested belongs to the push feature, which this connection did not enable",
    });
  });

  it("delta.append's offset fits the same table", () => {
    const delta = { type: "message.delta", conversation_id: conv, message_id: "m", offset: 3, text: "lo" };
    expect(extensionsUsed(delta)).toEqual(["delta.append"]);
    expect(checkFeatures(delta, [])?.message).toBe(
      "offset belongs to the delta.append feature, which this connection did not enable",
    );
    expect(checkFeatures(delta, new Set(["delta.append"]))).toBeUndefined();
  });

  it("passes a v1 message whatever is enabled", () => {
    for (const [, frame] of serverFixtures.filter(([, f]) => extensionsUsed(f).length === 0)) {
      expect(checkFeatures(frame, [])).toBeUndefined();
      expect(checkFeatures(frame, FEATURES)).toBeUndefined();
    }
  });
});
