// docs/architecture.md leads with a map of src/, one layer per line. It is only worth reading while it
// is true, so this test holds it to the tree and to the import rules dependency-cruiser enforces.
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../", import.meta.url);
const src = new URL("src/", root);

/** The map's layers, top to bottom: the names at the start of each unindented line of the block. */
function mapLayers(): string[][] {
  const doc = readFileSync(new URL("../../docs/architecture.md", root), "utf8");
  const marker = doc.indexOf("<!-- src-map");
  expect(marker, "docs/architecture.md has no src-map block").toBeGreaterThan(-1);
  const open = doc.indexOf("```\n", marker) + 4;
  const block = doc.slice(open, doc.indexOf("```", open));
  return block
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith(" "))
    .map((line) =>
      (line.split(/ {2,}/)[0] ?? "")
        .split(" ")
        .filter((name) => name.endsWith("/") || name.endsWith(".ts"))
        .map((name) => name.replace(/\/$/, "")),
    );
}

/** The LAYERS list of .dependency-cruiser.cjs, bottom to top. */
function cruiserLayers(): string[][] {
  const config = readFileSync(new URL(".dependency-cruiser.cjs", root), "utf8");
  const list = /const LAYERS = (\[[\s\S]*?\]);/.exec(config)?.[1];
  expect(list, ".dependency-cruiser.cjs has no LAYERS list").toBeDefined();
  return JSON.parse((list as string).replace(/,(\s*\])/g, "$1"));
}

describe("docs/architecture.md's map of src/", () => {
  it("names every folder and root file of src/, and nothing else", () => {
    const tree = readdirSync(src, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.name.endsWith(".ts"))
      .map((entry) => entry.name)
      .sort();
    expect(mapLayers().flat().sort()).toEqual(tree);
  });

  it("lists the layers dependency-cruiser enforces, in the same order", () => {
    expect(mapLayers().reverse()).toEqual(cruiserLayers());
  });
});
