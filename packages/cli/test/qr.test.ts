// The terminal QR code, read back the way a phone would: the printed characters are turned into
// pixels and decoded with jsQR, an independent decoder.
import jsqr from "jsqr";
import { describe, expect, it } from "vitest";
import { qrModules, terminalQr } from "../src/qr.js";

// jsqr is CommonJS (module.exports = jsQR, with jsQR.default = jsQR); its types describe the ESM view.
const jsQR = jsqr.default;
const URI = "pheby://pair?url=wss%3A%2F%2Fpheby.example.com%2Fws&code=Q2xhdWRlIHdhcyBoZXJlIQ";
const PIXELS_PER_MODULE = 4;

/** The module grid a terminal shows for `printed` (half blocks: two module rows a character). */
function gridOf(printed: string): boolean[][] {
  const lines = printed.replaceAll("\x1b[30;107m", "").replaceAll("\x1b[0m", "").trimEnd().split("\n");
  const grid: boolean[][] = [];
  for (const line of lines) {
    const chars = [...line];
    grid.push(chars.map((c) => c === "█" || c === "▀"));
    grid.push(chars.map((c) => c === "█" || c === "▄"));
  }
  return grid;
}

/** Decode a module grid as an image: dark modules black, the rest (and a white border) white. */
function decode(grid: boolean[][]): string | undefined {
  const border = 4;
  const width = (grid[0]!.length + 2 * border) * PIXELS_PER_MODULE;
  const height = (grid.length + 2 * border) * PIXELS_PER_MODULE;
  const data = new Uint8ClampedArray(width * height * 4).fill(255);
  for (const [r, row] of grid.entries())
    for (const [c, dark] of row.entries()) {
      if (!dark) continue;
      for (let y = 0; y < PIXELS_PER_MODULE; y++)
        for (let x = 0; x < PIXELS_PER_MODULE; x++) {
          const i =
            (((r + border) * PIXELS_PER_MODULE + y) * width + (c + border) * PIXELS_PER_MODULE + x) * 4;
          data.fill(0, i, i + 3);
        }
    }
  return jsQR(data, width, height, { inversionAttempts: "dontInvert" })?.data;
}

describe("terminal QR code", () => {
  it("decodes back to the pairing URI, on a terminal (ANSI black on white) and in a file", () => {
    for (const color of [true, false]) {
      const printed = terminalQr(URI, color);
      expect(printed.includes("\x1b[30;107m")).toBe(color);
      expect(decode(gridOf(printed))).toBe(URI);
    }
  });

  it("keeps a quiet zone of light modules and fits a pairing URI in 24 terminal rows", () => {
    const modules = qrModules(URI);
    expect(modules[0]!.every((dark) => !dark)).toBe(true);
    expect(modules.map((row) => row[1]).every((dark) => !dark)).toBe(true);
    expect(modules[2]![2]).toBe(true); // the finder pattern's corner
    expect(terminalQr(URI, false).trimEnd().split("\n").length).toBeLessThanOrEqual(24);
  });

  it("is not a picture of something else: another URI decodes to itself, not to the first", () => {
    const other = URI.replace("Q2xh", "ZZZZ");
    expect(decode(gridOf(terminalQr(other, true)))).toBe(other);
  });
});
