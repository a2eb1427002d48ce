import { defineConfig } from "tsup";
import { phebyBuild } from "../../tsup.shared.js";

export default defineConfig(
  phebyBuild({ main: "src/main.ts" }, { format: ["esm"], dts: false, banner: { js: "#!/usr/bin/env node" } }),
);
