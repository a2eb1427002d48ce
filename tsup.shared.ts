// One build config for every published package (the honojs/middleware pattern):
// each package's tsup.config.ts only names its entry points. Libraries ship ESM and CommonJS, each
// with its own declarations (index.d.ts / index.d.cts), so a `require()` typechecks only where it works.
import type { Options } from "tsup";

export function phebyBuild(entry: Record<string, string>, extra: Partial<Options> = {}): Options {
  return {
    entry,
    format: ["esm", "cjs"],
    target: "node20",
    dts: true,
    sourcemap: true,
    clean: true,
    splitting: false,
    treeshake: true,
    ...extra,
  };
}
