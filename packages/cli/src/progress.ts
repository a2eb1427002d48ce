import type { Io } from "./io.js";

/** Human-readable byte counts: 512 B, 1.5 KiB, 3.2 MiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** One frame of a progress bar, e.g. `notes.pdf [#######.............]  35%  1.2 MiB/3.4 MiB`. */
export function progressBar(label: string, done: number, total: number | undefined, width = 24): string {
  if (total === undefined || total <= 0) return `${label}  ${formatBytes(done)}`;
  const ratio = Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  return `${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${percent}  ${formatBytes(done)}/${formatBytes(total)}`;
}

/**
 * Progress on stderr: a bar redrawn in place on a TTY, plain lines otherwise
 * (one per 25% step, so logs stay short). stdout stays clean for results.
 */
export class Progress {
  private lastStep = -1;
  private lastDraw = 0;

  constructor(
    private readonly io: Io,
    private readonly label: string,
  ) {}

  update(done: number, total: number | undefined): void {
    if (this.io.stderr.isTTY) {
      const now = Date.now();
      if (now - this.lastDraw < 50 && done !== total) return;
      this.lastDraw = now;
      this.io.stderr.write(`\r\x1b[K${progressBar(this.label, done, total)}`);
      return;
    }
    const step = total ? Math.floor((done / total) * 4) : -1;
    if (total && step > this.lastStep) {
      this.lastStep = step;
      this.io.stderr.write(`${this.label}: ${formatBytes(done)} of ${formatBytes(total)} (${step * 25}%)\n`);
    }
  }

  /** Finish the bar (a final newline on a TTY). */
  done(done: number): void {
    if (this.io.stderr.isTTY) this.io.stderr.write(`\r\x1b[K${progressBar(this.label, done, done)}\n`);
    else if (this.lastStep < 4) this.io.stderr.write(`${this.label}: ${formatBytes(done)} (100%)\n`);
  }
}
