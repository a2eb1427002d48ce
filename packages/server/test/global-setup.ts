// Runs once per `vitest run`, before any test file: bundles the fake ACP agent into one plain
// JavaScript file, so each of the hundreds of agent processes the ACP tests spawn starts with
// `node <bundle>` instead of compiling TypeScript through tsx first (about half a second per
// spawn on a loaded machine). The agent is the same code, still a real child process over stdio.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** Path of the bundled fake ACP agent (test/acp/fake-agent.ts). */
    fakeAgentBundle: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "pheby-fake-agent-"));
  const outfile = join(dir, "fake-agent.mjs");
  await build({
    entryPoints: [fileURLToPath(new URL("./acp/fake-agent.ts", import.meta.url))],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // The MCP SDK's stdio client pulls in CommonJS (cross-spawn) that requires Node built-ins.
    banner: {
      js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);',
    },
    logLevel: "warning",
  });
  project.provide("fakeAgentBundle", outfile);
  return () => rmSync(dir, { recursive: true, force: true });
}
