import qrcode from "qrcode-generator";

/** Light modules around the code. The spec asks for 4; 2 keeps a pairing code within 24 terminal rows and scans fine, since it is painted light. */
const QUIET_ZONE = 2;
/** ANSI: black foreground on bright-white background, so the code scans on dark and light terminal themes alike. */
const DARK_ON_LIGHT = "\x1b[30;107m";
const RESET = "\x1b[0m";

/** The modules of `text`'s QR code (error correction M, the smallest version that fits), quiet zone included; true is dark. */
export function qrModules(text: string): boolean[][] {
  const qr = qrcode(0, "M");
  qr.addData(text, "Byte");
  qr.make();
  const count = qr.getModuleCount();
  const size = count + 2 * QUIET_ZONE;
  return Array.from({ length: size }, (_, row) =>
    Array.from({ length: size }, (_, col) => {
      const r = row - QUIET_ZONE;
      const c = col - QUIET_ZONE;
      return r >= 0 && c >= 0 && r < count && c < count && qr.isDark(r, c);
    }),
  );
}

/**
 * `text` as a QR code for a terminal: two module rows per line, with half blocks (`▀ ▄ █`) drawn for
 * dark modules. With `color` (a terminal), each line is painted black on bright white so the code
 * keeps its polarity whatever the theme; without it (a file, a pipe), the blocks alone.
 */
export function terminalQr(text: string, color: boolean): string {
  const modules = qrModules(text);
  const lines: string[] = [];
  for (let row = 0; row < modules.length; row += 2) {
    const top = modules[row]!;
    const bottom = modules[row + 1];
    const cells = top.map((dark, col) => {
      const below = bottom?.[col] ?? false;
      return dark ? (below ? "█" : "▀") : below ? "▄" : " ";
    });
    lines.push(color ? `${DARK_ON_LIGHT}${cells.join("")}${RESET}` : cells.join(""));
  }
  return `${lines.join("\n")}\n`;
}
