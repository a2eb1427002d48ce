import { describe, expect, it } from "vitest";
import { diffLines, formatCost, formatTokens } from "../src/activity.js";

describe("diffLines", () => {
  it("gives each line of a unified diff its kind, dropping jsdiff's Index and rule lines", () => {
    const patch = [
      "Index: a.ts",
      "===================================================================",
      "--- a.ts",
      "+++ a.ts",
      "@@ -1,3 +1,3 @@",
      " keep",
      "-old",
      "+new",
      "",
      "\\ No newline at end of file",
      "",
    ].join("\n");
    expect(diffLines(patch)).toEqual([
      { kind: "meta", text: "--- a.ts" },
      { kind: "meta", text: "+++ a.ts" },
      { kind: "hunk", text: "@@ -1,3 +1,3 @@" },
      { kind: "ctx", text: " keep" },
      { kind: "del", text: "-old" },
      { kind: "add", text: "+new" },
      { kind: "ctx", text: "" },
      { kind: "meta", text: "\\ No newline at end of file" },
    ]);
  });

  it("reads git's file header as meta up to the first hunk, and only the first character inside a hunk", () => {
    const patch = [
      "diff --git a/notes.md b/notes.md",
      "index 3b18e51..a2c4b6d 100644",
      "--- a/notes.md",
      "+++ b/notes.md",
      "@@ -1,3 +1,3 @@",
      "--- a removed rule",
      "+++ an added rule",
      " same",
      "",
    ].join("\n");
    expect(diffLines(patch)).toEqual([
      { kind: "meta", text: "diff --git a/notes.md b/notes.md" },
      { kind: "meta", text: "index 3b18e51..a2c4b6d 100644" },
      { kind: "meta", text: "--- a/notes.md" },
      { kind: "meta", text: "+++ b/notes.md" },
      { kind: "hunk", text: "@@ -1,3 +1,3 @@" },
      { kind: "del", text: "--- a removed rule" },
      { kind: "add", text: "+++ an added rule" },
      { kind: "ctx", text: " same" },
    ]);
  });
});

describe("the context meter's numbers", () => {
  it("tokens in a few characters", () => {
    expect([950, 1000, 12_345, 200_000, 1_234_567].map(formatTokens)).toEqual([
      "950",
      "1.0k",
      "12k",
      "200k",
      "1.2M",
    ]);
  });

  it("a cost in its currency, or as reported when the currency is not an ISO code", () => {
    expect(formatCost({ amount: 0.42, currency: "USD" })).toBe("$0.42");
    expect(formatCost({ amount: 3, currency: "credits" })).toBe("3 credits");
  });
});
