import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * The directory of the built web console (`@pheby/console`'s `dist`), or an
 * error message saying why it is unavailable.
 */
export function consoleDistDir(): { dir: string } | { error: string } {
  let pkg: string;
  try {
    pkg = createRequire(import.meta.url).resolve("@pheby/console/package.json");
  } catch {
    return { error: "PHEBY_CONSOLE is on but the @pheby/console package is not installed" };
  }
  const dir = join(dirname(pkg), "dist");
  if (!existsSync(join(dir, "index.html")))
    return { error: `PHEBY_CONSOLE is on but the console is not built (no ${join(dir, "index.html")})` };
  return { dir };
}
