import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { consoleDistDir } from "../src/console.js";

describe("consoleDistDir", () => {
  // turbo builds @pheby/console before this package (it is a dependency).
  it("finds the built console of the @pheby/console dependency", () => {
    const found = consoleDistDir();
    expect(found).toHaveProperty("dir");
    if ("dir" in found) {
      expect(found.dir).toMatch(/console[\\/]dist$/);
      expect(existsSync(join(found.dir, "index.html"))).toBe(true);
    }
  });
});
