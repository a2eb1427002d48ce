// A launcher shim like `npx` or a `node_modules/.bin` wrapper: starts the real agent as a child
// sharing its stdio, then dies on SIGTERM (Node's default) without passing the signal on.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

const [file, ...args] = process.argv.slice(2);
const child = spawn(file, args, { stdio: "inherit" });
if (process.env.FAKE_PIDS) appendFileSync(process.env.FAKE_PIDS, `${child.pid}\n`);
child.on("exit", (code) => process.exit(code ?? 1));
