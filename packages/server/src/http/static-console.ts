import { readdirSync, readFileSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import type { Env, Hono } from "hono";

/** Where the console is mounted. */
export const CONSOLE_PATH = "/console";

/**
 * The console's Content-Security-Policy: scripts, styles and connections only
 * from this origin (no inline script, no eval), images also from blob: URLs
 * (authenticated previews), nothing framed, no form posts.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** A console build held in memory: URL path below `/console/` → file. */
export type ConsoleFiles = ReadonlyMap<string, StaticFile>;

interface StaticFile {
  body: Uint8Array;
  type: string;
  /** Content-hashed build assets never change; everything else is revalidated. */
  immutable: boolean;
}

function walk(dir: string, root: string, files: Map<string, StaticFile>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, root, files);
    else if (entry.isFile()) {
      const url = relative(root, path).split(sep).join("/");
      files.set(url, {
        body: readFileSync(path),
        type: TYPES[extname(entry.name).toLowerCase()] ?? "application/octet-stream",
        immutable: url.startsWith("assets/"),
      });
    }
  }
}

/**
 * Read a console build into memory, once, at startup. Throws when `dir` holds
 * no index.html (e.g. the console was not built).
 */
export function loadConsoleFiles(dir: string): ConsoleFiles {
  const files = new Map<string, StaticFile>();
  walk(dir, dir, files);
  if (!files.has("index.html")) throw new Error(`staticConsoleDir has no index.html: ${dir}`);
  return files;
}

/**
 * Serve a console build at `/console/`. A request can only name one of the
 * files read at startup (an exact key lookup), so no request path ever
 * reaches the filesystem. Restart the server to pick up a new build.
 */
export function mountConsole<E extends Env>(app: Hono<E>, files: ConsoleFiles): void {
  const headers = (file: StaticFile) => ({
    "content-type": file.type,
    "cache-control": file.immutable ? "public, max-age=31536000, immutable" : "no-cache",
    "content-security-policy": CONSOLE_CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
  });

  app.get(CONSOLE_PATH, (c) => c.redirect(`${CONSOLE_PATH}/`, 308));
  app.get(`${CONSOLE_PATH}/*`, (c) => {
    const key = c.req.path.slice(CONSOLE_PATH.length + 1) || "index.html";
    const file = files.get(key);
    if (!file) return c.notFound();
    return c.body(file.body as Uint8Array<ArrayBuffer>, 200, headers(file));
  });
}
