import { describe, expect, it } from "vitest";
import {
  ALTERNATIVE_REPLY_TYPES,
  CLOSE_CODES,
  EXTENSION_FIELDS,
  EXTENSION_TYPES,
  FEATURE_PRIORITY,
  FEATURES,
  HELLO_FEATURES_SENT_MAX,
  helloFeatureNames,
  LIMITS,
  REPLY_RULES,
  REPLY_TYPES,
  replyRuleOf,
} from "../src/index.js";
import { committedSchema } from "./helpers.js";

// The drift of schema/meta.json from the source is checked with the JSON Schema bundles (schema.test.ts).
describe("schema/meta.json", () => {
  const meta = committedSchema("meta.json") as {
    requests: Record<string, { reply: string; rule: string; alternative?: { reply: string; rule: string } }>;
    extensions: Record<string, { types: string[]; fields: Record<string, string[]> }>;
    features: string[];
    feature_priority: string[];
    hello_features_sent_max: number;
    close_codes: Record<string, number>;
    limits: Record<string, number>;
  };

  it("gives every request its reply type and rule, and the alternative reply of the two that have one", () => {
    expect(Object.keys(meta.requests)).toEqual(Object.keys(REPLY_TYPES));
    for (const [request, { reply, rule, alternative }] of Object.entries(meta.requests)) {
      expect(reply).toBe(REPLY_TYPES[request as keyof typeof REPLY_TYPES]);
      expect(rule).toBe(REPLY_RULES[request as keyof typeof REPLY_RULES]);
      expect(alternative?.reply).toBe((ALTERNATIVE_REPLY_TYPES as Record<string, string>)[request]);
    }
  });

  it("lists each feature's types and fields, every extension table entry exactly once", () => {
    expect(Object.keys(meta.extensions)).toEqual([...FEATURES]);
    const types = Object.entries(meta.extensions).flatMap(([f, e]) => e.types.map((t) => [t, f]));
    expect(Object.fromEntries(types)).toEqual(EXTENSION_TYPES);
    expect(types).toHaveLength(Object.keys(EXTENSION_TYPES).length);
    const fields = Object.entries(meta.extensions).flatMap(([f, e]) =>
      Object.entries(e.fields).flatMap(([type, paths]) => paths.map((p) => `${type} ${p} ${f}`)),
    );
    const source = Object.entries(EXTENSION_FIELDS).flatMap(([type, byPath]) =>
      Object.entries(byPath).map(([p, f]) => `${type} ${p} ${f}`),
    );
    expect(fields.sort()).toEqual(source.sort());
  });

  it("carries the features in priority order, the close codes and the limits", () => {
    expect(meta.features).toEqual([...FEATURES]);
    expect(meta.feature_priority).toEqual([...FEATURE_PRIORITY]);
    expect(meta.hello_features_sent_max).toBe(16);
    expect(meta.close_codes).toEqual(CLOSE_CODES);
    expect(meta.limits).toEqual(LIMITS);
    expect(meta.limits.helloFeatures).toBe(64);
  });
});

describe("reply rules", () => {
  it("follow docs/protocol.md's broadcast rules", () => {
    expect(replyRuleOf("chat.send", "run.accepted")).toBe("broadcast");
    expect(replyRuleOf("chat.send", "run.queued")).toBe("requester");
    expect(replyRuleOf("run.cancel", "run.finished")).toBe("broadcast_all");
    expect(replyRuleOf("approval.respond", "approval.resolved")).toBe("broadcast_all");
    expect(replyRuleOf("clarify.respond", "clarify.resolved")).toBe("broadcast_all");
    expect(replyRuleOf("yolo.set", "yolo.changed")).toBe("requester");
    expect(replyRuleOf("schedule.update", "schedule.changed")).toBe("broadcast");
    expect(replyRuleOf("device.revoke", "device.revoked")).toBe("broadcast");
    expect(replyRuleOf("modes.list", "modes.snapshot")).toBe("requester");
    expect(replyRuleOf("mode.set", "mode.changed")).toBe("broadcast");
    expect(replyRuleOf("commands.list", "commands.snapshot")).toBe("requester");
    expect(replyRuleOf("conversation.read", "conversation.status")).toBe("broadcast");
    expect(replyRuleOf("conversation.archive", "conversation.status")).toBe("broadcast");
    expect(replyRuleOf("conversation.search", "conversation.results")).toBe("requester");
    expect(replyRuleOf("agents.list", "agents.snapshot")).toBe("requester");
    expect(replyRuleOf("workspaces.list", "workspaces.snapshot")).toBe("requester");
    expect(replyRuleOf("changes.list", "changes.snapshot")).toBe("requester");
    expect(replyRuleOf("changes.diff", "changes.file")).toBe("requester");
    expect(replyRuleOf("conversation.open", "conversation.resumed")).toBe("requester");
    expect(replyRuleOf("tool.get", "tool.event")).toBe("requester");
    expect(replyRuleOf("ping", "ready")).toBeUndefined();
    expect(replyRuleOf("presence", "pong")).toBeUndefined();
  });
});

describe("FEATURE_PRIORITY and the names a hello sends", () => {
  it("orders every feature exactly once", () => {
    expect([...FEATURE_PRIORITY].sort()).toEqual([...FEATURES].sort());
    expect(FEATURE_PRIORITY[0]).toBe("delta.append");
  });

  it("sends at most 16 names: known ones by priority, then others in the caller's order", () => {
    expect(HELLO_FEATURES_SENT_MAX).toBe(16);
    expect(helloFeatureNames(["push", "x-later", "delta.append", "push", "resume"])).toEqual([
      "delta.append",
      "resume",
      "push",
      "x-later",
    ]);
    const many = Array.from({ length: 20 }, (_, i) => `x-${i}`);
    const sent = helloFeatureNames([...many, ...FEATURES]);
    expect(sent).toHaveLength(16);
    expect(sent).toEqual([...FEATURE_PRIORITY, ...many.slice(0, 16 - FEATURES.length)]);
  });

  it("keeps a required name whatever else it drops", () => {
    const many = Array.from({ length: 20 }, (_, i) => `x-${i}`);
    const sent = helloFeatureNames(["delta.append", ...many, "devices"], ["devices"]);
    expect(sent).toHaveLength(16);
    expect(sent.slice(0, 2)).toEqual(["delta.append", "devices"]);
    expect(helloFeatureNames(["push"], ["devices"])).toEqual(["push"]);
  });
});
