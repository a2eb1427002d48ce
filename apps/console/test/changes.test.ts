import { describe, expect, it } from "vitest";
import { statusMark, totals } from "../src/changes.js";

describe("a changed file's status", () => {
  it("is a letter and a word, and one a newer server added reads as changed", () => {
    expect(["added", "modified", "deleted", "renamed", "type_changed", "copied"].map(statusMark)).toEqual([
      ["A", "added"],
      ["M", "modified"],
      ["D", "deleted"],
      ["R", "renamed"],
      ["T", "type changed"],
      ["?", "changed"],
    ]);
  });
});

describe("the totals", () => {
  it("count files, added and removed lines", () => {
    expect(totals(1, 2, 0)).toBe("1 file +2 −0");
    expect(totals(3, 5, 2)).toBe("3 files +5 −2");
  });
});
