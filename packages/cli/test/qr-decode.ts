// Reading a terminal QR code back the way a phone would: the printed characters become pixels,
// decoded with jsQR, an independent decoder.
import jsqr from "jsqr";

// jsqr is CommonJS (module.exports = jsQR, with jsQR.default = jsQR); its types describe the ESM view.
const jsQR = jsqr.default;
const PIXELS_PER_MODULE = 4;

/** The module grid a terminal shows for `printed` (half blocks: two module rows a character). */
export function gridOf(printed: string): boolean[][] {
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
export function decode(grid: boolean[][]): string | undefined {
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
