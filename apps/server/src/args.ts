// pheby-server takes its configuration from the environment and YAML only; the command line
// carries just --help, --version and the operator commands (rotate-secret, devices, worktrees), so an
// operator who types `pheby-server --help` gets the settings instead of a server started on its
// defaults.

import { readFileSync } from "node:fs";
import { PROTOCOL_VERSION } from "@pheby/protocol";
import { ENV_NAMES } from "./config.js";

/** `pheby-server --version`: this app's version (package.json sits above both src/ and dist/). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return `pheby-server ${pkg.version} (Pheby Protocol v${PROTOCOL_VERSION})`;
}

/** `pheby-server --help`: every setting, by its environment variable and its YAML key. */
export function help(): string {
  const width = Math.max(...Object.keys(ENV_NAMES).map((name) => name.length));
  const settings = Object.entries(ENV_NAMES).map(
    ([name, path]) => `  ${name.padEnd(width)}  ${path.join(".")}`,
  );
  return [
    "usage: pheby-server                     start the server (configured by the environment and YAML)",
    "       pheby-server --help              this text",
    "       pheby-server --version           the version and the protocol version",
    "       pheby-server rotate-secret       replace the generated secret (<data_dir>/secret) with a new",
    "                                        one; restart the server to use it. Paired devices keep",
    "                                        working: rotating the secret does not revoke them",
    "       pheby-server devices [list]      the paired devices (phones) in the data directory",
    "       pheby-server devices revoke-all  revoke every paired device at once",
    "       pheby-server worktrees           the conversations' git worktrees left in the worktrees",
    "                                        directory, each with its branch, whether it holds",
    "                                        uncommitted changes and whether its conversation exists",
    "       pheby-server worktrees --prune   remove those that are clean and whose conversation no",
    "                                        longer exists (their branches are kept)",
    "",
    "With no settings it runs the simulator agent, keeps its data in ./.pheby-data and",
    "generates a secret there. Settings (environment variable, then its key in the YAML",
    "file named by PHEBY_CONFIG; the environment wins):",
    `  ${"PHEBY_CONFIG".padEnd(width)}  (the YAML file)`,
    ...settings,
    "",
    "Several agents and workspaces are configured in the YAML file only (agents:, workspaces:;",
    "docs/agents.md), not together with agent: or the PHEBY_AGENT_* variables.",
    "",
    "Docs: docs/deployment.md",
  ].join("\n");
}

/** What the command line asks for; `unknown` carries the first argument not understood. */
export type Invocation =
  | { run: "server" }
  | { run: "help" | "version" }
  | { run: "rotate-secret" }
  | { run: "devices"; action: "list" | "revoke-all" }
  | { run: "worktrees"; prune: boolean }
  | { run: "unknown"; arg: string };

/** Reads `process.argv.slice(2)`. */
export function parseArgs(args: readonly string[]): Invocation {
  const [first, second, ...rest] = args;
  if (first === undefined) return { run: "server" };
  if (first === "--help" || first === "-h") return { run: "help" };
  if (first === "--version" || first === "-V") return { run: "version" };
  if (first === "rotate-secret" && second === undefined) return { run: "rotate-secret" };
  if (first === "devices" && rest.length === 0) {
    if (second === undefined || second === "list") return { run: "devices", action: "list" };
    if (second === "revoke-all") return { run: "devices", action: "revoke-all" };
  }
  if (first === "worktrees" && rest.length === 0) {
    if (second === undefined) return { run: "worktrees", prune: false };
    if (second === "--prune") return { run: "worktrees", prune: true };
  }
  const unknown = ["rotate-secret", "devices", "worktrees"].includes(first) ? args.join(" ") : first;
  return { run: "unknown", arg: unknown };
}
