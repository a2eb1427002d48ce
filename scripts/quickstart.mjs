#!/usr/bin/env node
// Runs the README's Quick start as written, on a fresh clone of HEAD in a temp dir, and fails when a
// command breaks. The commands come from README.md itself: every fenced block right after a
// `<!-- quickstart … -->` line, in order, split on newlines and `&&`. So README and test cannot drift.
//
// Three commands cannot run verbatim in a test, and get the closest faithful stand-in:
// - `npm i -g pnpm@N`: must not change the machine's global install; we check `pnpm --version` is N.x.
// - `pnpm install`: run with `--frozen-lockfile --prefer-offline`, so a warm pnpm store is used.
// - `pnpm start`: runs in the background (its own process group) on a free port instead of 8620 (other
//   servers may hold it); `127.0.0.1:8620` in later commands is rewritten to that port. We wait for
//   /health, and stop the server at the end.
// Everything else runs verbatim in bash, in the clone, with the `export`s of earlier lines.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = new URL("..", import.meta.url).pathname;
const START_TIMEOUT_MS = 15 * 60_000; // a cold clone may compile better-sqlite3 and build everything
const COMMAND_TIMEOUT_MS = 10 * 60_000;

/** The shell lines of the README's quick-start blocks, comments removed. */
function quickstartCommands(readme) {
  const lines = readme.split("\n");
  const commands = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith("<!-- quickstart")) continue;
    if (!lines[i + 1]?.startsWith("```"))
      throw new Error(`README.md:${i + 1}: a quickstart marker must precede a fenced block`);
    for (i += 2; i < lines.length && !lines[i].startsWith("```"); i++) {
      const line = lines[i].replace(/(^|\s)#\s.*$/, "").trim();
      if (line) commands.push(...line.split(" && ").map((c) => c.trim()));
    }
  }
  return commands;
}

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

function log(message) {
  process.stdout.write(`quickstart: ${message}\n`);
}

const env = { ...process.env };
// The developer's own server settings must not leak into the README's commands.
for (const key of Object.keys(env)) if (key.startsWith("PHEBY_")) delete env[key];

const dir = mkdtempSync(join(tmpdir(), "pheby-quickstart-"));
const clone = join(dir, "pheby");
let server = null;
const exports = [];
let passed = 0;
const began = Date.now();

function stopServer() {
  if (!server || server.exitCode !== null) return;
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {}
}

async function run() {
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: repo, encoding: "utf8" }).trim();
  log(`cloning ${head.slice(0, 12)} into ${clone}`);
  execFileSync("git", ["clone", "--quiet", "--no-checkout", repo, clone]);
  execFileSync("git", ["checkout", "--quiet", head], { cwd: clone });

  const commands = quickstartCommands(readFileSync(join(clone, "README.md"), "utf8"));
  if (!commands.includes("pnpm start"))
    throw new Error("README.md's quickstart blocks do not run `pnpm start`");
  const port = await freePort();

  for (const raw of commands) {
    const command = raw.replaceAll("127.0.0.1:8620", `127.0.0.1:${port}`);
    const t0 = Date.now();
    log(`$ ${raw}`);
    const pnpmGlobal = /^npm i(?:nstall)? -g pnpm@(\d+)$/.exec(command);
    if (pnpmGlobal) {
      const version = execFileSync("pnpm", ["--version"], { encoding: "utf8" }).trim();
      if (!version.startsWith(`${pnpmGlobal[1]}.`))
        throw new Error(`pnpm ${version} is not ${pnpmGlobal[1]}.x`);
    } else if (command === "pnpm install") {
      const out = sh("pnpm install --frozen-lockfile --prefer-offline");
      if (/Failed to create bin/.test(out)) throw new Error(`pnpm install warned:\n${out}`);
    } else if (command === "pnpm start") {
      await startServer(port);
    } else {
      const out = sh([...exports, command].join("\n"));
      if (command.startsWith("export ")) exports.push(command);
      else if (!out.trim()) throw new Error("printed nothing");
    }
    passed++;
    log(`  ok (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
}

/** Run a command in bash in the clone; throws with its output unless it exits 0. */
function sh(script) {
  const r = spawnSync("bash", ["-eo", "pipefail", "-c", script], {
    cwd: clone,
    env,
    encoding: "utf8",
    timeout: COMMAND_TIMEOUT_MS,
  });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  for (const line of out.trimEnd().split("\n")) process.stdout.write(`    ${line}\n`);
  if (r.status !== 0) throw new Error(`exited ${r.status ?? r.signal ?? r.error}`);
  return out;
}

async function startServer(port) {
  let output = "";
  server = spawn("bash", ["-c", "pnpm start"], {
    cwd: clone,
    env: { ...env, PHEBY_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so pnpm, turbo and node all stop together
  });
  server.stdout.on("data", (d) => (output += d));
  server.stderr.on("data", (d) => (output += d));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`pnpm start exited ${server.exitCode}:\n${output}`);
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`pnpm start did not serve /health within ${START_TIMEOUT_MS / 1000} s:\n${output}`);
}

let failed = 0;
try {
  await run();
} catch (err) {
  failed = 1;
  log(`FAILED: ${err instanceof Error ? err.message : err}`);
} finally {
  stopServer();
  if (server) {
    const exited = new Promise((r) => server.once("exit", r));
    const kill = setTimeout(() => process.kill(-server.pid, "SIGKILL"), 15_000);
    if (server.exitCode === null) await exited;
    clearTimeout(kill);
  }
  if (process.argv.includes("--keep")) log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
log(`${((Date.now() - began) / 1000).toFixed(0)} s`);
process.stdout.write(`quickstart: ${passed} passed, ${failed} failed\n`);
process.exit(failed);
