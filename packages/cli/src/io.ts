import type { Readable, Writable } from "node:stream";

/** Where a command reads and writes; injectable so tests and the REPL share one path. */
export interface Io {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
}

/** The process's own streams and environment. */
export function processIo(): Io {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env };
}

/** Write a line of JSON (machine-readable output: one object per line). */
export function writeJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Write a line of text to stdout. */
export function writeLine(io: Io, text = ""): void {
  io.stdout.write(`${text}\n`);
}

/** Write a diagnostic line to stderr. */
export function note(io: Io, text: string): void {
  io.stderr.write(`${text}\n`);
}
