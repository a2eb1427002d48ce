import { describe, expect, it } from "vitest";
import {
  applyDelta,
  decodeClientFrame,
  deltaOffset,
  FEATURE_DELTA_APPEND,
  FEATURES,
  LIMITS,
} from "../src/index.js";

const hello = (features: unknown) =>
  decodeClientFrame(JSON.stringify({ type: "hello", secret: "s", protocol_version: 1, features }));

describe("hello.features", () => {
  it("accepts exactly 64 names of up to 64 characters, and unknown names", () => {
    expect(LIMITS.helloFeatures).toBe(64);
    const names = Array.from({ length: 64 }, (_, i) => `${i}`.padEnd(LIMITS.featureNameChars, "x"));
    expect(hello(names)).toMatchObject({ ok: true, message: { features: names } });
    expect(hello([])).toMatchObject({ ok: true, message: { features: [] } });
    expect(FEATURES).toContain(FEATURE_DELTA_APPEND);
  });

  it("rejects 65 names, a 65-character name, a non-array and non-strings with bad_request", () => {
    const cases: [unknown, string][] = [
      [Array.from({ length: 65 }, (_, i) => `f${i}`), "features must have at most 64 items"],
      [["x".repeat(65)], "features.0 must have at most 64 characters"],
      ["delta.append", "features must be array"],
      [[1], "features.0 must be string"],
      [null, "features must be array"],
    ];
    for (const [features, message] of cases) {
      expect(hello(features)).toEqual({ ok: false, error: { code: "bad_request", message } });
    }
  });
});

describe("applyDelta", () => {
  it("replaces the draft with a cumulative (v1) delta", () => {
    expect(applyDelta("anything", { text: "Hello" })).toBe("Hello");
  });

  it("keeps the draft up to offset and appends text", () => {
    expect(applyDelta("", { offset: 0, text: "Hel" })).toBe("Hel");
    expect(applyDelta("Hel", { offset: 3, text: "lo" })).toBe("Hello");
    expect(applyDelta("Hello", { offset: 1, text: "ola" })).toBe("Hola"); // a rewrite
    expect(applyDelta("Hello", { offset: 0, text: "Bye" })).toBe("Bye"); // a full replace
  });

  it("throws a RangeError when the offset is beyond the draft (a missed delta)", () => {
    expect(applyDelta("He", { offset: 2, text: "y" })).toBe("Hey");
    expect(() => applyDelta("He", { offset: 3, text: "y" })).toThrow(RangeError);
  });
});

describe("deltaOffset", () => {
  it("is the previous length when the text grew, the common prefix otherwise", () => {
    expect(deltaOffset("", "abc")).toBe(0);
    expect(deltaOffset("ab", "abc")).toBe(2);
    expect(deltaOffset("abc", "abc")).toBe(3);
    expect(deltaOffset("abX", "abcd")).toBe(2);
    expect(deltaOffset("abc", "ab")).toBe(2);
    expect(deltaOffset("xyz", "abc")).toBe(0);
  });

  it("never splits a surrogate pair", () => {
    const grin = "😀"; // \ud83d\ude00
    // The previous draft ended inside a pair (a chunk boundary split it): the delta starts at the pair.
    expect(deltaOffset(`a${grin[0]}`, `a${grin}b`)).toBe(1);
    // Two emoji sharing the high surrogate: the rewrite starts at the pair, not at its low half.
    expect(deltaOffset("a😀", "a😁")).toBe(1);
    expect(deltaOffset(`a${grin}`, `a${grin}b`)).toBe(3);
    for (const [prev, next] of [
      [`a${grin[0]}`, `a${grin}b`],
      ["a😀", "a😁"],
    ] as const) {
      const offset = deltaOffset(prev, next);
      expect(applyDelta(prev, { offset, text: next.slice(offset) })).toBe(next);
      expect(next.slice(offset).charCodeAt(0)).not.toBe(0xde00);
    }
  });
});
