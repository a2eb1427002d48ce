#!/usr/bin/env node
// The published packages as a user gets them: `pnpm pack` each one (workspace: and catalog: ranges
// are rewritten), `npm install` the tarballs in a temp dir outside the workspace (third-party
// dependencies come from the registry), then:
// - typecheck an import of every library from ESM and CommonJS (module nodenext) and with bundler
//   resolution, together with the README examples (checkJs);
// - require() every library from CommonJS;
// - run each package README's example (the fenced block after `<!-- example: NAME -->`, taken from the
//   installed package, so the READMEs users read cannot rot): the server example serves, the client
//   example chats with it, the conformance example passes against it;
// - run the installed `pheby` CLI: a chat and `pheby conformance`.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const repo = new URL("..", import.meta.url).pathname;
const LIBRARIES = ["protocol", "server", "client", "testkit", "conformance"];
const PACKAGES = [...LIBRARIES, "cli"];
const TIMEOUT_MS = 10 * 60_000;

const dir = mkdtempSync(join(tmpdir(), "pheby-packages-"));
const tarballs = join(dir, "tarballs");
const app = join(dir, "app");
const results = { passed: 0, failed: 0 };
let server = null;

function log(message) {
  process.stdout.write(`packages: ${message}\n`);
}

/** Run a command; throws with its output unless it exits 0. Returns stdout + stderr. */
function run(file, args, options = {}) {
  const r = spawnSync(file, args, { cwd: app, encoding: "utf8", timeout: TIMEOUT_MS, ...options });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  if (r.status !== 0)
    throw new Error(`${file} ${args.join(" ")} exited ${r.status ?? r.signal ?? r.error}:\n${out}`);
  return out;
}

/** Run one check; a failed `required` check skips the rest (they would only fail the same way). */
async function step(name, fn, { required = false } = {}) {
  if (aborted) return;
  const t0 = Date.now();
  try {
    await fn();
    results.passed++;
    log(`ok   ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    results.failed++;
    log(`FAIL ${name}: ${err instanceof Error ? err.message : err}`);
    if (required) aborted = true;
  }
}
let aborted = false;

/**
 * better-sqlite3's native addon. Compiling it from source (no prebuilt binary can be downloaded here)
 * takes many minutes on a loaded CI machine, so by default the install skips install scripts and
 * reuses the workspace's build of the same version for the same Node.js; `--compile` builds it.
 */
function reuseSqliteAddon() {
  const fromWorkspace = createRequire(join(repo, "packages", "server", "package.json"));
  const fromApp = createRequire(join(app, "package.json"));
  const [ours, theirs] = [fromWorkspace, fromApp].map((r) => r.resolve("better-sqlite3/package.json"));
  const version = (file) => JSON.parse(readFileSync(file, "utf8")).version;
  if (version(ours) !== version(theirs))
    throw new Error(`better-sqlite3 ${version(theirs)} != workspace ${version(ours)}`);
  const addon = join("build", "Release", "better_sqlite3.node");
  mkdirSync(join(dirname(theirs), "build", "Release"), { recursive: true });
  copyFileSync(join(dirname(ours), addon), join(dirname(theirs), addon));
}
const compile = process.argv.includes("--compile");

function expectIn(out, needle) {
  if (!out.includes(needle)) throw new Error(`expected ${JSON.stringify(needle)} in:\n${out}`);
}

/** The catalog's pinned version of a dependency, so the test installs what the workspace uses. */
function catalogVersion(name) {
  const yaml = readFileSync(join(repo, "pnpm-workspace.yaml"), "utf8");
  const match = new RegExp(`^\\s+"?${name.replace("/", "\\/")}"?: (\\S+)$`, "m").exec(yaml);
  if (!match) throw new Error(`${name} is not in the catalog`);
  return match[1];
}

/** The README's examples: `{ file, code }` for each block after an `<!-- example: file -->` line. */
function readmeExamples(readme) {
  const examples = [];
  const re = /^<!-- example: (\S+) -->\n```\w*\n([\s\S]*?)\n```$/gm;
  for (const m of readme.matchAll(re)) examples.push({ file: m[1], code: `${m[2]}\n` });
  return examples;
}

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

const IMPORTS = `import { decodeClientFrame } from "@pheby/protocol";
import { createPhebyServer, createSimulatorBackend } from "@pheby/server";
import { PhebyClient } from "@pheby/client";
import { runConformance } from "@pheby/conformance";
export const api = [decodeClientFrame, createPhebyServer, createSimulatorBackend, PhebyClient, runConformance];
`;

const began = Date.now();
const examples = [];
const env = { ...process.env };
for (const key of Object.keys(env)) if (key.startsWith("PHEBY_")) delete env[key];

await step(
  "pack the five packages with pnpm",
  () => {
    run(
      "pnpm",
      [
        "turbo",
        "run",
        "build",
        "--output-logs=errors-only",
        ...PACKAGES.flatMap((n) => ["--filter", `@pheby/${n}`]),
      ],
      { cwd: repo },
    );
    mkdirSync(tarballs);
    for (const name of PACKAGES) {
      run("pnpm", ["pack", "--pack-destination", tarballs], { cwd: join(repo, "packages", name) });
    }
    if (readdirSync(tarballs).length !== PACKAGES.length) throw new Error(`${readdirSync(tarballs)}`);
  },
  { required: true },
);

await step(
  "npm install the tarballs outside the workspace",
  () => {
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), '{ "name": "pheby-packages-test", "private": true }\n');
    const files = readdirSync(tarballs).map((f) => join(tarballs, f));
    run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      ...(compile ? [] : ["--ignore-scripts"]),
      ...files,
      `typescript@${catalogVersion("typescript")}`,
      `@types/node@${catalogVersion("@types/node")}`,
    ]);
    if (!compile) reuseSqliteAddon();
    for (const name of PACKAGES) {
      const readme = readFileSync(join(app, "node_modules", "@pheby", name, "README.md"), "utf8");
      readFileSync(join(app, "node_modules", "@pheby", name, "LICENSE"), "utf8");
      for (const example of readmeExamples(readme)) {
        writeFileSync(join(app, example.file), example.code);
        examples.push(example.file);
      }
    }
    for (const file of ["protocol.mjs", "server.mjs", "chat.mjs", "conformance.mjs"]) {
      if (!examples.includes(file)) throw new Error(`no README example ${file} (found ${examples})`);
    }
  },
  { required: true },
);

await step("typecheck imports and README examples: nodenext (ESM + CJS) and bundler", () => {
  writeFileSync(join(app, "check.mts"), IMPORTS);
  writeFileSync(join(app, "check.cts"), IMPORTS);
  writeFileSync(join(app, "check.ts"), IMPORTS);
  const base = { strict: true, noEmit: true, target: "es2022", types: ["node"], skipLibCheck: false };
  const configs = {
    "tsconfig.nodenext.json": {
      compilerOptions: { ...base, module: "nodenext", allowJs: true, checkJs: true },
      files: ["check.mts", "check.cts", ...examples],
    },
    "tsconfig.bundler.json": {
      compilerOptions: { ...base, module: "esnext", moduleResolution: "bundler" },
      files: ["check.ts"],
    },
  };
  for (const [file, config] of Object.entries(configs)) {
    writeFileSync(join(app, file), JSON.stringify(config, null, 2));
    run(join(app, "node_modules", ".bin", "tsc"), ["-p", file]);
  }
});

await step("require() every library from CommonJS", () => {
  const script = LIBRARIES.map(
    (name) =>
      `if (Object.keys(require("@pheby/${name}")).length === 0) throw new Error("@pheby/${name} is empty");`,
  ).join("\n");
  writeFileSync(join(app, "require.cjs"), script);
  run(process.execPath, ["require.cjs"]);
});

await step("README example of @pheby/protocol", () => {
  const out = run(process.execPath, ["protocol.mjs"], { env });
  expectIn(out, "Hello");
  expectIn(out, "bad_request r2");
});

const port = await freePort();
const secret = randomBytes(32).toString("hex");
const clientEnv = { ...env, PHEBY_URL: `ws://127.0.0.1:${port}/ws`, PHEBY_SECRET: secret };

await step("README example of @pheby/server listens", async () => {
  server = spawn(process.execPath, ["server.mjs"], {
    cwd: app,
    env: { ...env, PHEBY_PORT: String(port), PHEBY_SECRET: secret },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  server.stdout.on("data", (d) => (out += d));
  server.stderr.on("data", (d) => (out += d));
  const deadline = Date.now() + 60_000;
  while (!out.includes(`Pheby on ws://127.0.0.1:${port}/ws`)) {
    if (server.exitCode !== null || Date.now() > deadline) throw new Error(`server.mjs: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

await step("README example of @pheby/client chats with it", () => {
  const out = run(process.execPath, ["chat.mjs"], { env: clientEnv });
  expectIn(out, 'You said: "Hello"');
  expectIn(out, "run completed");
});

await step("README example of @pheby/conformance passes against it", () => {
  run(process.execPath, ["conformance.mjs"], { env: clientEnv });
});

await step("the installed pheby CLI chats and runs pheby conformance", () => {
  const pheby = join(app, "node_modules", ".bin", "pheby");
  run(pheby, ["conversations", "create", "First"], { env: clientEnv });
  expectIn(run(pheby, ["chat", "First", "Hello"], { env: clientEnv }), 'You said: "Hello"');
  expectIn(run(pheby, ["conformance"], { env: clientEnv }), "passed");
});

if (server && server.exitCode === null) {
  await step("the server example stops cleanly on SIGTERM", async () => {
    const code =
      server.exitCode ??
      (await new Promise((r) => {
        server.once("exit", r);
        server.kill("SIGTERM");
      }));
    if (code !== 0) throw new Error(`exit ${code}`);
  });
}

if (process.argv.includes("--keep")) log(`kept ${dir}`);
else rmSync(dir, { recursive: true, force: true });
log(`${((Date.now() - began) / 1000).toFixed(0)} s`);
process.stdout.write(`packages: ${results.passed} passed, ${results.failed} failed\n`);
process.exit(results.failed > 0 ? 1 : 0);
