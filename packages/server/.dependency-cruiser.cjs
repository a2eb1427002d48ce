/**
 * The import rules of packages/server/src, checked by `pnpm lint` (dependency-cruiser).
 * docs/architecture.md ("The server: layers") explains them.
 *
 * LAYERS lists the folders (and root files) from the bottom up. A module may import its own
 * folder and any folder of a lower layer, never one of its own layer or above: the core never
 * learns of a transport, and a new transport or Outbox wrapper is added on top, not in between.
 */
const LAYERS = [
  ["util", "errors.ts", "log.ts"],
  ["auth", "files", "store", "agent-user", "activity"],
  ["git"],
  ["agent"],
  ["outbox"],
  ["agents"],
  [
    "attachments",
    "conversations",
    "decisions",
    "devices",
    "resume",
    "settings",
    "push",
    "schedules",
    "changes",
  ],
  ["runs", "mcp"],
  ["handlers", "host"],
  ["connection"],
  ["http", "transport", "extensions"],
  ["options.ts"],
  ["server.ts"],
  ["in-memory.ts"],
  ["index.ts"],
];

/** The domain services' layer (found by a member, so that adding a layer below does not shift it). */
const SERVICES = LAYERS.find((layer) => layer.includes("conversations"));

const path = (name) => `^src/${name.replace(/\./g, "\\.")}${name.endsWith(".ts") ? "$" : "/"}`;
const any = (names) => names.map(path).join("|");

const layering = LAYERS.flatMap((layer, level) =>
  layer.flatMap((name) => {
    const others = LAYERS.slice(level)
      .flat()
      .filter((n) => n !== name);
    if (others.length === 0) return [];
    return {
      name: `layer-${name}`,
      comment: `${name} may import only its own folder and lower layers (${LAYERS.slice(0, level).flat().join(", ") || "none"}).`,
      severity: "error",
      from: { path: path(name) },
      to: { path: any(others) },
    };
  }),
);

/** The ACP backend's parts: state and the leaf modules sit below supervisor, sessions, updates, prompt. */
const ACP = "^src/agent/acp/";
const ACP_UPPER = [
  "session-settings",
  "sessions",
  "updates",
  "supervisor",
  "questions",
  "prompt",
  "backend",
  "index",
];
const ACP_LOWER = [
  "state",
  "options",
  "process",
  "content",
  "settings",
  "turn",
  "permissions",
  "elicitation",
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layering,
    {
      name: "no-circular",
      comment: "No import cycles, at any level.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "resolvable",
      comment: "Every import resolves (an unresolved one would slip past the rules above).",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "ws-only-in-its-transport",
      comment: "Only transport/ws/ knows the ws package; everything else talks to a PeerLink or the Outbox.",
      severity: "error",
      from: { pathNot: "^src/transport/ws/" },
      to: { path: "(^|/)node_modules/ws/" },
    },
    {
      name: "sql-only-in-store",
      comment: "Only store/ opens or queries the database.",
      severity: "error",
      from: { pathNot: "^src/store/" },
      to: { path: "(^|/)node_modules/better-sqlite3/" },
    },
    {
      name: "connection-knows-no-extension",
      comment:
        "The connection layer reaches an extension only through the hooks registered with it (extensions/), and the core only through the handlers and the Outbox.",
      severity: "error",
      from: { path: "^src/connection/" },
      to: { path: `^src/(${SERVICES.join("|")}|runs|mcp)/` },
    },
    {
      name: "acp-state-below-its-parts",
      comment: "state.ts and the leaf modules of agent/acp never import the parts built on them.",
      severity: "error",
      from: { path: `${ACP}(${ACP_LOWER.join("|")})\\.ts$` },
      to: { path: `${ACP}(${ACP_UPPER.join("|")})\\.ts$` },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // Resolve packages' "exports" subpaths (e.g. @hono/node-server/utils/response) as Node does.
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "node", "default"] },
  },
};
