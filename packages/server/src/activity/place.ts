/**
 * Where a path the agent names is shown: relative to the path base when inside it, else scrubbed of
 * the server's own directories and marked outside.
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import { LIMITS } from "@pheby/protocol";
import { realOrGiven } from "./path-base.js";

/** What a path base and the server's scrubber make of paths and text. */
export interface PlaceContext {
  /** The agent's working directory: relative paths the agent names are relative to it. */
  cwd: string;
  /** The conversation's path base (see pathBaseOf). */
  base: string;
  /** Replaces the server's own directories in text (HostPaths.scrub). */
  scrub(text: string): string;
}

/** A placed path: relative inside the path base, or null and scrubbed outside it. */
export interface Placed {
  path: string | null;
  display: string;
  outside: boolean;
}

/** Cut a path or display text to the protocol's bound, keeping its end (the file name). */
function clipPath(text: string): string {
  const max = LIMITS.toolPathChars;
  return text.length > max ? `…${text.slice(text.length - max + 1)}` : text;
}

/** The path relative to `base` (`/`-separated, without `..`), or null when it is not inside it. */
function inside(abs: string, base: string): string | null {
  const rel = relative(base, abs);
  if (rel === "") return ".";
  if (rel.startsWith("..") || isAbsolute(rel)) return null;
  return rel.split(sep).join("/");
}

/** Place a path the agent named (absolute, or relative to its working directory). */
export function placePath(path: string, ctx: PlaceContext): Placed {
  const abs = resolve(ctx.cwd, path);
  // A path inside the base counts as inside by its given form or by its real one (a symlinked checkout).
  const rel = inside(abs, ctx.base) ?? inside(realOrGiven(abs), ctx.base);
  if (rel !== null) {
    const shown = clipPath(rel);
    return { path: shown, display: shown, outside: false };
  }
  return { path: null, display: clipPath(ctx.scrub(abs)), outside: true };
}

/**
 * Free text with the path base's absolute paths made relative (`<base>/src/a.ts` → `src/a.ts`, the
 * base itself → `.`), then the server's own directories scrubbed. A path counts only as a whole, as
 * HostPaths matches them: not inside a longer name.
 */
export function placeText(text: string, ctx: PlaceContext): string {
  if (ctx.base === sep) return ctx.scrub(text);
  // An agent may name a path relative to `/` (OpenCode's titles outside a git repository:
  // `tmp/work/a.txt`): the base counts in that form too when it has two or more segments (one alone,
  // `work`, is too likely a relative path of its own).
  const rootless = ctx.base.slice(1);
  const forms = rootless.split(sep).filter(Boolean).length >= 2 ? [ctx.base, rootless] : [ctx.base];
  const base = `(?:${forms.map(escapeRegExp).join("|")})`;
  const out = text
    .replace(new RegExp(`(?<![\\w.~/-])${base}${escapeRegExp(sep)}(?=[^\\s])`, "g"), "")
    .replace(new RegExp(`(?<![\\w.~/-])${base}(?![\\w.-])`, "g"), ".");
  return ctx.scrub(out);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
