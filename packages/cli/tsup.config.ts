import { defineConfig } from "tsup";
import { phebyBuild } from "../../tsup.shared.js";

// A command, not a library: no type declarations to publish.
export default defineConfig(phebyBuild({ main: "src/main.ts" }, { format: ["esm"], dts: false }));
