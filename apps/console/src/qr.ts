// The pairing QR code, drawn on a canvas (no image URL, so the console's strict CSP holds).
import qrcode from "qrcode-generator";

/** Light modules around the code, as the QR spec asks. */
const QUIET_ZONE = 4;

/**
 * Draw `text` as a QR code (error correction M, the smallest version that fits) on `canvas`:
 * black modules on white, `moduleSize` CSS pixels each, sharp on high-density screens.
 */
export function drawQr(canvas: HTMLCanvasElement, text: string, moduleSize = 6): void {
  const qr = qrcode(0, "M");
  qr.addData(text, "Byte");
  qr.make();
  const count = qr.getModuleCount();
  const cssSize = (count + 2 * QUIET_ZONE) * moduleSize;
  const scale = Math.max(1, Math.round(globalThis.devicePixelRatio || 1));
  canvas.width = cssSize * scale;
  canvas.height = cssSize * scale;
  canvas.style.width = `${cssSize}px`;
  canvas.style.height = `${cssSize}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error("no 2d canvas");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000";
  const cell = moduleSize * scale;
  for (let row = 0; row < count; row++)
    for (let col = 0; col < count; col++)
      if (qr.isDark(row, col)) ctx.fillRect((col + QUIET_ZONE) * cell, (row + QUIET_ZONE) * cell, cell, cell);
}
