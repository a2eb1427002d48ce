import { type ParseArgsConfig, parseArgs } from "node:util";
import type { PhebyClient } from "@pheby/client";
import { EXIT, UsageError } from "./exit.js";
import type { Io } from "./io.js";

type OptionsConfig = NonNullable<ParseArgsConfig["options"]>;

/** Flags every command accepts. */
export const GLOBAL_OPTIONS = {
  url: { type: "string" },
  secret: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} satisfies OptionsConfig;

/** Parsed flags: strings, booleans and repeated strings. */
export type Flags = Record<string, string | boolean | string[] | undefined>;

/** What a command receives. */
export interface Invocation {
  positionals: string[];
  flags: Flags;
  io: Io;
  /** The server connection settings from flags and environment. */
  server(): { url: string; secret: string };
  /** A connected client (asking for `features` besides the client's defaults); closed by the dispatcher when the command ends. */
  connect(options?: { reconnect?: boolean; features?: readonly string[] }): Promise<PhebyClient>;
}

/** One `pheby` subcommand. */
export interface Command {
  name: string;
  /** Arguments after the name, e.g. `<conversation> [text…]`. */
  usage: string;
  summary: string;
  /** Extra lines of help (sub-actions, flags). */
  details?: string[];
  /** At least one example, shown by `--help`. */
  examples: string[];
  options?: OptionsConfig;
  run(inv: Invocation): Promise<number>;
}

/** The default server when neither `--url` nor `PHEBY_URL` is given. */
export const DEFAULT_URL = "ws://127.0.0.1:8620/ws";

/** Normalise a server URL: http(s) becomes ws(s), and a bare host gets `/ws`. */
export function toWebSocketUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`--url: not a URL: ${url}`);
  }
  if (u.protocol === "http:") u.protocol = "ws:";
  else if (u.protocol === "https:") u.protocol = "wss:";
  else if (u.protocol !== "ws:" && u.protocol !== "wss:")
    throw new UsageError(`--url: use ws://, wss://, http:// or https:// (got ${u.protocol})`);
  if (u.pathname === "/" || u.pathname === "") u.pathname = "/ws";
  return u.toString();
}

/** The connection settings: flags win over `PHEBY_URL` / `PHEBY_SECRET`. */
export function serverSettings(flags: Flags, env: NodeJS.ProcessEnv): { url: string; secret: string } {
  const url = toWebSocketUrl((flags.url as string | undefined) ?? env.PHEBY_URL ?? DEFAULT_URL);
  const secret = (flags.secret as string | undefined) ?? env.PHEBY_SECRET;
  if (!secret) throw new UsageError("no secret: pass --secret or set PHEBY_SECRET");
  return { url, secret };
}

/** Parse a command's arguments with node:util parseArgs (strict: unknown flags are usage errors). */
export function parseCommandArgs(command: Command, args: string[]): { positionals: string[]; flags: Flags } {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...GLOBAL_OPTIONS, ...command.options },
      allowPositionals: true,
      strict: true,
    });
    return { positionals, flags: values as Flags };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The help text of a command: usage, summary, details and examples. */
export function commandHelp(command: Command): string {
  return [
    `Usage: pheby ${command.name} ${command.usage}`.trimEnd(),
    "",
    command.summary,
    ...(command.details?.length ? ["", ...command.details] : []),
    "",
    "Connection: --url URL (or PHEBY_URL, default ws://127.0.0.1:8620/ws), --secret S (or PHEBY_SECRET)",
    "Output: --json for machine-readable output (one JSON object per line)",
    "",
    command.examples.length > 1 ? "Examples:" : "Example:",
    ...command.examples.map((e) => `  ${e}`),
    "",
  ].join("\n");
}

/** A positional argument or a usage error naming it. */
export function required(positionals: string[], index: number, name: string): string {
  const value = positionals[index];
  if (value === undefined || value === "") throw new UsageError(`missing ${name}`);
  return value;
}

/** Parse a positive integer flag. */
export function intFlag(flags: Flags, name: string): number | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || !/^\d+$/.test(raw)) throw new UsageError(`--${name} must be a whole number`);
  return Number(raw);
}

export { EXIT };
