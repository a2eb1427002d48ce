#!/usr/bin/env node
// The `pheby` command. All logic lives in cli.ts so tests can run it in-process.
import { main } from "./cli.js";
import { processIo } from "./io.js";

const code = await main(process.argv.slice(2), processIo());
// stdout/stderr writes are synchronous for files, pipes and terminals on POSIX, so
// exiting now loses nothing; it also ends a chat whose stdin is still open.
process.exit(code);
