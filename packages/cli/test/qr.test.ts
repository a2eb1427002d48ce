// The terminal QR code, read back the way a phone would: the printed characters are turned into
// pixels and decoded with jsQR, an independent decoder.
import { describe, expect, it } from "vitest";
import { qrModules, terminalQr } from "../src/qr.js";
import { decode, gridOf } from "./qr-decode.js";

const URI = "pheby://pair?url=wss%3A%2F%2Fpheby.example.com%2Fws&code=Q2xhdWRlIHdhcyBoZXJlIQ";

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
