import { defineConfig } from "tsup";
import { phebyBuild } from "../../tsup.shared.js";

export default defineConfig(phebyBuild({ index: "src/index.ts" }));
