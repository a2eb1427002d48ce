import { defineConfig } from "tsup";
import { phebyBuild } from "../../tsup.shared.js";

// `mcp` is Pheby's stdio MCP relay, a program agents launch (`node dist/mcp.js`), not an export.
// `shims` gives the CommonJS build an `import.meta.url`, which locates it next to `index`.
export default defineConfig(phebyBuild({ index: "src/index.ts", mcp: "src/mcp/relay.ts" }, { shims: true }));
