#!/usr/bin/env node
// Committed bin entry: pnpm links bins at install time, before a fresh clone has built dist/,
// and warns "Failed to create bin" when the target does not exist yet.
import { existsSync } from "node:fs";

const main = new URL("../dist/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("pheby: not built yet; run `pnpm build` (or `pnpm start`) first\n");
  process.exit(1);
}
await import(main.href);
