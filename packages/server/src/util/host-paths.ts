/**
 * The server's own paths, replaced by placeholders in text that reaches a client.
 *
 * An agent's error text (a JSON-RPC error, a failed tool, a start failure) often names files of the
 * host: its install (`/opt/hermes/lib/python3.11/site-packages/…`), the working directory, Pheby's
 * data directory (attachment blobs), the home directory. A phone has no use for them and they tell
 * whoever reads them how the server is laid out, so they become `<agent>`, `<workdir>`, `<data>` and
 * `~`; the rest of the message, which says what went wrong, is kept.
 */
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { redactText } from "./redact.js";

/** Placeholders, in the order a path that is several of them is named (the first wins). */
export const PLACEHOLDERS = {
  data: "<data>",
  agent: "<agent>",
  workdir: "<workdir>",
  home: "~",
} as const;

/** What the server knows of its own layout; every field optional. */
export interface HostLayout {
  /** Pheby's data directory (database, attachment blobs). */
  dataDir?: string;
  /** The agent's argv: its install is found from the command (and any absolute path among its arguments). */
  agentCommand?: readonly string[];
  /** `PATH` the agent is spawned with, to find a bare command. Default: this process's. */
  agentPath?: string;
  /** Working directories: the agent's and the server's own. */
  workdirs?: readonly string[];
  /** Home directories: this process's and the one the agent is given (`HOME`). Default: `os.homedir()`. */
  homes?: readonly string[];
}

/** A path-looking word cut off with an ellipsis (`/tmp/pheby-...`, `/srv/wo…`). */
const CUT_PATH = /(?<![\w.~-])(\/[^\s"'`()<>,;]*?)(\.\.\.|…)/g;

/** Prefixes too general to stand for one install (the command was a system interpreter such as `/usr/bin/node`). */
const TOO_GENERAL = new Set(["/usr/local", "/usr/lib", "/usr/local/lib", "/usr/share", "/usr/lib64"]);

/**
 * Replace the server's paths in free text with placeholders. Build once (it resolves symlinks and
 * looks the agent command up on `PATH`), then call {@link scrub} per text.
 */
export class HostPaths {
  readonly #pattern: RegExp | null;
  readonly #rootlessPattern: RegExp | null;
  readonly #placeholder = new Map<string, string>();
  /** Placeholders by path without its leading `/` (paths of two or more segments only). */
  readonly #rootless = new Map<string, string>();

  constructor(layout: HostLayout) {
    const named: Array<[string, string]> = [];
    const add = (placeholder: string, path: string | undefined) => {
      if (!path || !isAbsolute(path)) return;
      for (const form of variants(path)) named.push([form, placeholder]);
    };
    add(PLACEHOLDERS.data, layout.dataDir);
    for (const root of agentInstalls(layout.agentCommand ?? [], layout.agentPath ?? process.env.PATH ?? ""))
      add(PLACEHOLDERS.agent, root);
    for (const dir of layout.workdirs ?? []) add(PLACEHOLDERS.workdir, dir);
    for (const home of layout.homes ?? [homedir()]) add(PLACEHOLDERS.home, home);
    for (const [path, placeholder] of named) {
      if (!this.#placeholder.has(path) && path !== sep) this.#placeholder.set(path, placeholder);
    }
    // An agent may name a path relative to `/` (OpenCode's titles outside a git repository:
    // `tmp/x/a.txt`), so each path of two or more segments also counts without its leading `/`
    // (one segment alone, `work` or `root`, is too likely an ordinary word or relative path).
    for (const path of [...this.#placeholder.keys()]) {
      const rootless = path.slice(1);
      if (rootless.split(sep).filter(Boolean).length >= 2 && !this.#placeholder.has(rootless))
        this.#rootless.set(rootless, this.#placeholder.get(path) as string);
    }
    // Longest first, so the most specific path wins (the data directory inside the home directory).
    const paths = [...this.#placeholder.keys()].sort((a, b) => b.length - a.length);
    const rootless = [...this.#rootless.keys()].sort((a, b) => b.length - a.length);
    // A path counts only as a whole: not inside a longer name (`/rootfs`, `/x/root`), but followed by
    // `/`, a quote, a space, punctuation or the end. A rootless one must not follow a `/` either (it
    // would be the tail of another path).
    this.#pattern =
      paths.length === 0
        ? null
        : new RegExp(`(?<![\\w.~-])(?:${paths.map(escapeRegExp).join("|")})(?![\\w-]|\\.\\w)`, "g");
    this.#rootlessPattern =
      rootless.length === 0
        ? null
        : new RegExp(`(?<![\\w.~/-])(?:${rootless.map(escapeRegExp).join("|")})(?![\\w-]|\\.\\w)`, "g");
  }

  /** `text` with every known server path (also one named without its leading `/`) replaced by its placeholder. */
  scrub(text: string): string {
    let out = text;
    if (this.#pattern) out = out.replace(this.#pattern, (path) => this.#placeholder.get(path) ?? path);
    if (this.#rootlessPattern)
      out = out.replace(this.#rootlessPattern, (path) => this.#rootless.get(path) ?? path);
    // An agent that shortens long titles may cut a server path (Hermes: `ls /tmp/pheby-...`): the part
    // left is no whole path, but still names the server's layout.
    return out.replace(CUT_PATH, (match, path: string, mark: string) => {
      const placeholder = this.#cutPlaceholder(path);
      return placeholder ? `${placeholder}${mark}` : match;
    });
  }

  /** The placeholder of a server path that `path` is the cut-off start of, past its first segment. */
  #cutPlaceholder(path: string): string | undefined {
    if (!/^\/[^/]+\/[^/]/.test(path)) return undefined;
    for (const [form, placeholder] of this.#placeholder)
      if (form.length > path.length && form.startsWith(path)) return placeholder;
    return undefined;
  }

  /**
   * How much of `text` can be scrubbed now when more text may follow it: all of it, unless a server
   * path may be starting where the text ends (its end is a beginning of a path, or a path whose next
   * characters decide whether it is whole); then up to there, and never inside a path it already names.
   * Scrubbed piece by piece at such cuts, text loses every path scrubbing it whole removes (a path at
   * the very start of a piece may be replaced where the whole text's neighbour would have spared it).
   */
  settled(text: string): number {
    let cut = text.length;
    // Trailing dots may be the start of the ellipsis that makes what precedes them a cut-off path.
    for (const whole of new Set([text, text.replace(/\.{1,2}$/, "")]))
      for (let i = 0; i < Math.min(cut, whole.length); i++) if (this.#undecidedAt(whole, i)) cut = i;
    for (const pattern of [this.#pattern, this.#rootlessPattern]) {
      if (!pattern) continue;
      for (const m of text.matchAll(pattern)) if (m.index < cut && cut < m.index + m[0].length) cut = m.index;
    }
    return cut;
  }

  /** Whether a path may start at `i` of `text` whose match is not decided before the text ends. */
  #undecidedAt(text: string, i: number): boolean {
    const before = text[i - 1] ?? "";
    const open = (forms: Iterable<string>, spared: RegExp) => {
      if (spared.test(before)) return false;
      for (const form of forms) {
        const left = text.length - i;
        if (left <= form.length) {
          if (form.startsWith(text.slice(i))) return true;
        } else if (text.startsWith(form, i)) {
          // A path followed by `.` alone: the character after the dot decides (`a.txt` is a longer name).
          if (left === form.length + 1 && text[i + form.length] === ".") return true;
        }
      }
      return false;
    };
    return open(this.#placeholder.keys(), /[\w.~-]/) || open(this.#rootless.keys(), /[\w.~/-]/);
  }

  /**
   * Text fit for a client: server paths replaced, secret-looking spans redacted, cut to `max`
   * characters (in that order, so the cut applies to what is sent).
   */
  clientText(text: string, max: number): string {
    return redactText(this.scrub(text), max);
  }
}

/** The path as given (without a trailing separator) and its real path, when different. */
function variants(path: string): string[] {
  const given = path.length > 1 && path.endsWith(sep) ? path.slice(0, -1) : path;
  const out = [given];
  try {
    const real = realpathSync(given);
    if (real !== given) out.push(real);
  } catch {
    // Not there (yet): the given form is all we have.
  }
  return out;
}

/** The filesystem root, a top-level directory (`/usr`, `/opt`) or a shared system prefix: no one install. */
function isGeneral(path: string): boolean {
  return path.split(sep).filter(Boolean).length < 2 || TOO_GENERAL.has(path);
}

/**
 * Where the agent is installed, from its command: the command's directory without a trailing
 * `bin` (a virtualenv, a prefix) or `node_modules/.bin` (the project holding it), and for a
 * command that resolves into `node_modules` (a linked npm bin) the package's own directory.
 * Absolute paths among the arguments (`node /srv/agent/main.js`) count too.
 */
export function agentInstalls(command: readonly string[], path: string): string[] {
  const [file, ...args] = command;
  const found = [file ? which(file, path) : undefined, ...args.filter(isAbsolute)].filter(
    (p): p is string => p !== undefined && existsSync(p),
  );
  const roots: string[] = [];
  for (const p of found) {
    roots.push(installOf(p));
    try {
      const real = realpathSync(p);
      roots.push(packageOf(real) ?? installOf(real));
    } catch {
      // Gone since: keep the given form.
    }
  }
  return [...new Set(roots)].filter((root) => !isGeneral(root));
}

function installOf(file: string): string {
  const dir = dirname(file);
  if (basename(dir) === ".bin" && basename(dirname(dir)) === "node_modules") return dirname(dirname(dir));
  return basename(dir) === "bin" ? dirname(dir) : dir;
}

/** `…/node_modules/@scope/name` or `…/node_modules/name` of a file inside an npm package. */
function packageOf(file: string): string | undefined {
  const marker = `${sep}node_modules${sep}`;
  const at = file.lastIndexOf(marker);
  if (at < 0) return undefined;
  const rest = file.slice(at + marker.length).split(sep);
  const depth = rest[0]?.startsWith("@") ? 2 : 1;
  if (rest.length <= depth) return undefined;
  return file.slice(0, at + marker.length) + rest.slice(0, depth).join(sep);
}

/** A command as `spawn` finds it: a path as given, else the first match on `PATH`. */
function which(command: string, path: string): string | undefined {
  if (command.includes(sep)) return resolve(command);
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, command);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Scrubs text that arrives in pieces (an agent's streamed thinking) as {@link HostPaths.scrub} scrubs it
 * whole: a path split across pieces is still replaced, and what it has handed out never changes, so the
 * output can stream append-only. A tail where a path may be starting ({@link HostPaths.settled}) waits
 * for more text or {@link end}.
 */
export class StreamScrubber {
  #pending = "";

  constructor(private readonly paths: HostPaths) {}

  /** Whether text waits for more (or for {@link end}). */
  get holding(): boolean {
    return this.#pending !== "";
  }

  /** Take a piece; returns the scrubbed text that can go out now (possibly ""). */
  push(piece: string): string {
    this.#pending += piece;
    const cut = this.paths.settled(this.#pending);
    if (cut === 0) return "";
    const ready = this.#pending.slice(0, cut);
    this.#pending = this.#pending.slice(cut);
    return this.paths.scrub(ready);
  }

  /** The stream ended: the waiting tail, scrubbed. */
  end(): string {
    const rest = this.#pending;
    this.#pending = "";
    return rest ? this.paths.scrub(rest) : "";
  }
}
