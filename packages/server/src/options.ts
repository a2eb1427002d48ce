/**
 * The options of a Pheby server: the documented {@link PhebyServerOptions}, and the one Zod schema
 * that checks them and fills in their defaults ({@link PhebyServerOptionsSchema}). The server
 * validates what it is given with it before anything opens; a configuration layer (pheby-server's
 * env and YAML) builds its own value checks from {@link optionRules}, so both refuse the same values
 * with the same words.
 */

import { statSync } from "node:fs";
import { isAbsolute } from "node:path";
import type { Logger } from "pino";
import { z } from "zod/v3";
import type { AgentBackend } from "./agent/port.js";
import type { AgentShare } from "./agent-user/shared-dir.js";
import {
  checkPlacementOptions,
  ENTITY_ID,
  MAX_AGENTS,
  MAX_NAME_CHARS,
  MAX_WORKSPACES,
} from "./agents/config.js";
import { isTrustedProxySetting, type TrustedProxy } from "./auth/address.js";
import { isPublicWebSocketUrl } from "./devices/uri.js";
import { DEFAULT_ASK_TIMEOUT_MS } from "./mcp/agent-tools.js";
import { AGENT_TOOL_NAMES, type AgentToolName } from "./mcp/tools.js";
import type { Resolve } from "./push/address.js";
import type { RetryPolicy } from "./push/delivery.js";
import type { PushOptions } from "./push/service.js";
import { DEFAULT_CANCEL_GRACE_MS } from "./runs/engine.js";
import { checkTimezone, DEFAULT_MISSED_GRACE_MS } from "./schedules/rules.js";
import { DEFAULT_RESUME_LOG_LIMITS, type ResumeLogLimits } from "./store/resume-log.js";
import { type Clock, systemClock, type Timers } from "./util/time.js";

/** Options of {@link createPhebyServer}. */
export interface PhebyServerOptions {
  /**
   * The master secret: the owner's credential, which clients send in `hello` (compared in constant
   * time). Required. Paired devices (the `devices` extension) have secrets of their own.
   */
  secret: string;
  /**
   * The WebSocket URL phones reach this server at (e.g. `wss://pheby.example.com/ws`), which
   * pairing URIs carry. Default none: `pair.create` is then `not_implemented`, naming the setting.
   */
  publicUrl?: string;
  /** Directory for the SQLite database and the attachment blobs (`attachments/`); created if missing. */
  dataDir: string;
  /**
   * The agent backend of a single-agent server: one agent `default`; default
   * {@link createSimulatorBackend}(). Not together with {@link agents}.
   */
  agent?: AgentBackend;
  /**
   * Several agents side by side (the `workspaces` extension): each with an `id` (`[a-z0-9-]`,
   * 1–32 chars, unique), a display `name` and its own backend. The first is the *default agent*.
   * Each backend is started when first used and supervises its own agent: one agent's crash,
   * restart or hang never touches another's runs. Not together with {@link agent}.
   */
  agents?: readonly AgentOption[];
  /**
   * The projects conversations work in: `path` absolute and an existing directory, `agents` the
   * agent ids allowed there (default every agent, in {@link agents}' order). Default: one workspace
   * `default` at {@link workdir}. Clients know them by id and name only; a path never reaches them.
   */
  workspaces?: readonly WorkspaceOption[];
  /**
   * The working directory of the default workspace when {@link workspaces} is not given (absolute;
   * default the default agent backend's own `cwd`, else `process.cwd()`).
   */
  workdir?: string;
  /** pino logger; default silent. Secrets are always redacted. */
  logger?: Logger;
  /** Let chat text reach the logs (default false). */
  logChatContent?: boolean;
  /** Time a new connection has to send `hello`, in ms (default 10,000). */
  authTimeoutMs?: number;
  /** Interval of ws-level pings, in ms (default 30,000); a peer that misses one is dropped. */
  heartbeatIntervalMs?: number;
  /** Failed-hello lockout: `maxFailures` (5) within `windowMs` (60,000) lock the address for `durationMs` (300,000). */
  lockout?: { maxFailures?: number; windowMs?: number; durationMs?: number };
  /**
   * After `run.cancel`, how long the agent gets to stop before the run is reported `cancelled` anyway,
   * in ms (default 5,000). The conversation takes new messages from then on; a new turn waits for the
   * agent's previous one to end before it reaches the agent (see docs/protocol.md, Cancellation).
   */
  cancelGraceMs?: number;
  /** Per-client send-buffer cap in bytes (default 8 MiB); a client over it is closed with 4503. */
  maxBufferedBytes?: number;
  /**
   * Coalescing window of `message.delta`, in ms (default 100): the first chunk
   * of a message is sent at once, later ones at most once per window; 0 sends
   * a delta per agent chunk. `message.complete` always carries the exact text.
   */
  deltaIntervalMs?: number;
  /**
   * Send connections without `delta.append` fewer deltas of a long answer (default true): once a
   * cumulative delta's frame no longer fits deflate's 32 KiB window, at most one per 0.67–1.5 s,
   * growing with its size (docs/performance.md). `deltaIntervalMs: 0` turns it off too.
   */
  thinV1Deltas?: boolean;
  /**
   * Offer permessage-deflate on the WebSocket (default true). Cumulative
   * deltas compress to about their new text; `maxPayload` applies to the
   * inflated size. See docs/performance.md for the memory it costs.
   */
  compression?: boolean;
  /**
   * Injectable clock (ms since the epoch) for timestamps, lockout and schedules; default `Date.now`.
   * A clock that also has `setTimeout`/`clearTimeout` drives the scheduler's timer too, so a test
   * can move time to a schedule's minute instead of waiting for it.
   */
  clock?: Clock | (Clock & Timers);
  /** The `server` field of `ready` (default "pheby"). */
  serverName?: string;
  /**
   * Serve the built web console (`apps/console/dist`) from this directory at
   * `/console/` (default: not served). Files are read once at creation and
   * sent with a strict CSP; see docs/console.md.
   */
  staticConsoleDir?: string;
  /**
   * Push notifications (the `push` extension): previews, private endpoints, the VAPID contact. The
   * VAPID key pair is generated on first start in `<dataDir>/vapid.json` (mode 0600).
   */
  push?: PushOptions;
  /** Days attachments are kept (default 7); 0 keeps them forever (`expires_at: null`). */
  attachmentRetentionDays?: number;
  /**
   * Directories the agent may deliver files from (default none). A produced
   * file is copied into the store only when its real path (symlinks
   * resolved) lies inside one of them; anything else is refused and logged.
   */
  allowedFileRoots?: readonly string[];
  /**
   * The agent runs as another OS user (`AcpBackendOptions.user`): the directory Pheby shares with
   * it and that user's group. Pheby makes it (and `mcp/`, `uploads/` inside) group-owned, setgid
   * and 0770, and puts its MCP socket and the copies of uploads the agent reads there; its secret,
   * database and keys stay in the 0700 data directory. Must not lie inside `dataDir`.
   */
  agentShare?: AgentShare;
  /**
   * Origins (e.g. `https://console.example.com`) of browser pages allowed to use the server
   * besides its own (default none): CORS headers on the attachment and answer routes, and the
   * WebSocket handshake. Needed only when the web console is served from another origin.
   */
  corsOrigins?: readonly string[];
  /**
   * Whose `X-Forwarded-For` names the client's address for the lockout: `"loopback"` (default: any
   * loopback peer, a Caddy on the same host), `"none"`, or the proxies' own IP addresses. Every
   * local user can connect from loopback, so `"loopback"` lets them pick the address their guesses
   * count against (docs/security.md).
   */
  trustedProxy?: TrustedProxy;
  /**
   * HTTP idle timeout in ms (default 60,000): a connection that moves no byte
   * in either direction for this long is cut, and a stalled upload gets 408.
   * There is no limit on a request's total duration, so a 64 MiB upload or
   * download over a slow phone link completes as long as bytes keep flowing.
   */
  httpIdleTimeoutMs?: number;
  /**
   * Bound on the message text of one `conversation.history` page, in UTF-8
   * bytes (default 2 MiB). A page holds at most `limit` messages and at most
   * this much text, but always at least one message; `has_more` says when to
   * page on. Keeps one reply from growing with the size of the transcript.
   */
  historyPageBytes?: number;
  /**
   * Bounds of each conversation's resume log (the `resume` extension), oldest
   * events evicted first (default 2,000 events and 8 MiB of event JSON). A
   * client that was away for longer than the log reaches back gets the
   * snapshot instead of a replay.
   */
  replayLog?: Partial<ResumeLogLimits>;
  /**
   * Offer the `resume` extension (default true): keep the resume log and
   * answer `since_seq` and `client_message_id`. False keeps no log and never
   * enables `resume`, so a reconnecting client takes the snapshot (as in v1).
   */
  resume?: boolean;
  /** Scheduled prompts (the `schedules` extension). */
  schedules?: {
    /**
     * After downtime, a missed occurrence younger than this runs once at start (default 1 hour);
     * older ones are skipped. Never more than one run per schedule.
     */
    missedGraceMs?: number;
    /** IANA time zone of schedules created without one (default: the server's). */
    timezone?: string;
  };
  /**
   * Pheby's own MCP server, offered to ACP agents in their sessions (`mcpServers`): `ask_user`,
   * `schedule_create` / `_list` / `_delete`, `notify_user`, `send_file` (docs/agents.md). On by
   * default; served in this process, over loopback HTTP to agents that declare ACP
   * `mcpCapabilities.http`, else through a small stdio relay and a Unix socket in `dataDir`; a
   * token per agent process either way.
   */
  agentTools?: {
    /** Offer the MCP server at all (default true). */
    enabled?: boolean;
    /** The tools offered (default all). */
    tools?: readonly AgentToolName[];
    /** How long `ask_user` waits for an answer, in ms (default 240,000; less for an agent known to time out sooner). */
    askTimeoutMs?: number;
    /** argv of the stdio MCP relay (default: this Node.js and the package's `dist/mcp.js`). */
    command?: readonly string[];
  };
}

/** One agent of {@link PhebyServerOptions.agents}. */
export interface AgentOption {
  id: string;
  name: string;
  backend: AgentBackend;
}

/** One workspace of {@link PhebyServerOptions.workspaces}. */
export interface WorkspaceOption {
  id: string;
  name: string;
  /** Absolute path of an existing directory. */
  path: string;
  /** Agent ids allowed here (default every agent). */
  agents?: readonly string[];
}

/** Default bind address and port. */
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 8620;
/** Default failed-hello lockout. */
export const DEFAULT_LOCKOUT = { maxFailures: 5, windowMs: 60_000, durationMs: 300_000 } as const;
/** Default per-client send-buffer cap. */
export const DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/**
 * Default coalescing window of `message.delta`, in ms. Deltas carry the
 * cumulative text, so one per token makes a long answer cost quadratic
 * bandwidth; ten a second still looks live (docs/performance.md).
 */
export const DEFAULT_DELTA_INTERVAL_MS = 100;
/** Default HTTP idle timeout (see {@link PhebyServerOptions.httpIdleTimeoutMs}). */
export const DEFAULT_HTTP_IDLE_TIMEOUT_MS = 60_000;
/** Default bound on one history page's message text (see {@link PhebyServerOptions.historyPageBytes}). */
export const DEFAULT_HISTORY_PAGE_BYTES = 2 * 1024 * 1024;
/** Default attachment retention, in days. */
export const DEFAULT_ATTACHMENT_RETENTION_DAYS = 7;
/** Default interval of WebSocket-level pings, in ms (see {@link PhebyServerOptions.heartbeatIntervalMs}). */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 30_000;
/** Default time a new connection has to send `hello`, in ms. */
export const DEFAULT_AUTH_TIMEOUT_MS = 10_000;
export { DEFAULT_ASK_TIMEOUT_MS, DEFAULT_CANCEL_GRACE_MS, DEFAULT_MISSED_GRACE_MS };

/** A number that passes `check`; anything else (NaN, a string) gets `message`. */
const numberWhere = (check: (n: number) => boolean, message: string) =>
  z.custom<number>((value) => typeof value === "number" && check(value), message);
const atLeast = (min: number) =>
  numberWhere((n) => Number.isFinite(n) && n >= min, `must be a number >= ${min}`);
const wholeAtLeast = (min: number, unit = "") =>
  numberWhere((n) => Number.isInteger(n) && n >= min, `must be a whole number${unit} >= ${min}`);
const anyNumber = z.number();

function isTimezone(value: string): boolean {
  try {
    checkTimezone(value);
    return true;
  } catch {
    return false;
  }
}

/** A page origin: scheme, host and optional port, nothing else (what a browser sends in `Origin`). */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value;
  } catch {
    return false;
  }
}

/** A VAPID contact: a `mailto:` or `https:` URL. */
function isContact(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "mailto:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** True when `path` names an existing directory (symlinks followed). */
function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

const entityName = z
  .string()
  .min(1, "must be a non-empty name")
  .max(MAX_NAME_CHARS, `must be at most ${MAX_NAME_CHARS} characters`);

const agentBackend = z.custom<AgentBackend>(
  (v) => typeof v === "object" && v !== null,
  "must be an agent backend",
);

/**
 * The rules of single option values, each with the message that names what is expected. A layer
 * that maps its own settings onto {@link PhebyServerOptionsSchema} (env names, seconds instead of
 * ms) pipes its values into these rather than repeating them.
 */
export const optionRules = {
  publicUrl: z
    .string()
    .refine(
      isPublicWebSocketUrl,
      "must be the WebSocket URL phones reach the server at, like wss://pheby.example.com/ws (ws:// or wss://, no credentials, query or fragment)",
    ),
  trustedProxy: z.custom<TrustedProxy>(
    isTrustedProxySetting,
    'must be "loopback", "none" or a list of IP addresses (of the proxies whose X-Forwarded-For to believe, e.g. 172.17.0.1)',
  ),
  corsOrigin: z
    .string()
    .refine(
      isOrigin,
      "each entry must be an origin like https://console.example.com (scheme, host, optional port; no path)",
    ),
  pushSubject: z.string().refine(isContact, "must be a mailto: or https: URL, e.g. mailto:admin@example.com"),
  timezone: z.string().refine(isTimezone, "must be an IANA time zone such as Europe/Berlin or UTC"),
  /** An agent or workspace id. */
  entityId: z.string().regex(ENTITY_ID, "must be 1-32 characters of a-z, 0-9 and -"),
  /** An absolute path of an existing directory (a workspace, the working directory). */
  directory: z
    .string()
    .refine(isAbsolute, "must be an absolute path")
    .refine(isDirectory, "must be an existing directory"),
  agentToolName: z.enum(AGENT_TOOL_NAMES, {
    errorMap: () => ({ message: `must be one of ${AGENT_TOOL_NAMES.join(", ")}` }),
  }),
} as const;

/** The options' fields, each with its own rule and default (see {@link PhebyServerOptionsSchema}). */
const optionsObject = z.object({
  secret: z
    .string({
      invalid_type_error: "must be a non-empty string",
      required_error: "must be a non-empty string",
    })
    .min(1, "must be a non-empty string"),
  publicUrl: optionRules.publicUrl.optional(),
  dataDir: z
    .string({ invalid_type_error: "must be a path", required_error: "must be a path" })
    .min(1, "must be a path"),
  agent: agentBackend.optional(),
  agents: z
    .array(z.object({ id: optionRules.entityId, name: entityName, backend: agentBackend }))
    .min(1, "must list at least one agent")
    .max(MAX_AGENTS, `must list at most ${MAX_AGENTS} agents`)
    .readonly()
    .optional(),
  workspaces: z
    .array(
      z.object({
        id: optionRules.entityId,
        name: entityName,
        path: optionRules.directory,
        agents: z.array(optionRules.entityId).readonly().optional(),
      }),
    )
    .min(1, "must list at least one workspace")
    .max(MAX_WORKSPACES, `must list at most ${MAX_WORKSPACES} workspaces`)
    .readonly()
    .optional(),
  workdir: optionRules.directory.optional(),
  logger: z.custom<Logger>((v) => typeof v === "object" && v !== null, "must be a pino logger").optional(),
  logChatContent: z.boolean().default(false),
  authTimeoutMs: anyNumber.default(DEFAULT_AUTH_TIMEOUT_MS),
  heartbeatIntervalMs: anyNumber.default(DEFAULT_HEARTBEAT_INTERVAL_MS),
  lockout: z
    .object({
      maxFailures: anyNumber.default(DEFAULT_LOCKOUT.maxFailures),
      windowMs: anyNumber.default(DEFAULT_LOCKOUT.windowMs),
      durationMs: anyNumber.default(DEFAULT_LOCKOUT.durationMs),
    })
    .default({}),
  cancelGraceMs: anyNumber.default(DEFAULT_CANCEL_GRACE_MS),
  maxBufferedBytes: anyNumber.default(DEFAULT_MAX_BUFFERED_BYTES),
  deltaIntervalMs: atLeast(0).default(DEFAULT_DELTA_INTERVAL_MS),
  thinV1Deltas: z.boolean().default(true),
  compression: z.boolean().default(true),
  clock: z
    .custom<Clock | (Clock & Timers)>(
      (v) => typeof (v as Partial<Clock> | null)?.now === "function",
      "must be a clock (an object with now())",
    )
    .default(systemClock),
  serverName: z.string().default("pheby"),
  staticConsoleDir: z.string().optional(),
  push: z
    .object({
      preview: z.boolean().optional(),
      allowPrivate: z.boolean().optional(),
      subject: optionRules.pushSubject.optional(),
      timeoutMs: anyNumber.optional(),
      retry: z.custom<RetryPolicy>().optional(),
      resolve: z.custom<Resolve>().optional(),
    })
    .optional(),
  attachmentRetentionDays: wholeAtLeast(0).default(DEFAULT_ATTACHMENT_RETENTION_DAYS),
  allowedFileRoots: z.array(z.string()).readonly().default([]),
  agentShare: z.object({ dir: z.string(), gid: z.number().int() }).optional(),
  corsOrigins: z.array(optionRules.corsOrigin).readonly().default([]),
  trustedProxy: optionRules.trustedProxy.default("loopback"),
  httpIdleTimeoutMs: wholeAtLeast(1, " of ms").default(DEFAULT_HTTP_IDLE_TIMEOUT_MS),
  historyPageBytes: wholeAtLeast(1).default(DEFAULT_HISTORY_PAGE_BYTES),
  replayLog: z
    .object({
      maxEvents: wholeAtLeast(1).default(DEFAULT_RESUME_LOG_LIMITS.maxEvents),
      maxBytes: wholeAtLeast(1).default(DEFAULT_RESUME_LOG_LIMITS.maxBytes),
    })
    .default({}),
  resume: z.boolean().default(true),
  schedules: z
    .object({
      missedGraceMs: atLeast(0).default(DEFAULT_MISSED_GRACE_MS),
      timezone: optionRules.timezone.optional(),
    })
    .default({}),
  agentTools: z
    .object({
      enabled: z.boolean().default(true),
      tools: z.array(optionRules.agentToolName).readonly().default(AGENT_TOOL_NAMES),
      askTimeoutMs: wholeAtLeast(1_000, " of ms").default(DEFAULT_ASK_TIMEOUT_MS),
      command: z.array(z.string()).readonly().optional(),
    })
    .default({}),
});

/**
 * The one schema of {@link PhebyServerOptions}: what each option accepts and its default. Parsing
 * yields {@link ResolvedServerOptions}. Objects the server is handed (the agent backend, the logger,
 * the clock) pass through as they are.
 * Across options, {@link checkPlacementOptions} checks agents and workspaces (each problem names its
 * option path).
 */
export const PhebyServerOptionsSchema = optionsObject.superRefine(checkPlacementOptions);

/** {@link PhebyServerOptions} with every default filled in, as the server uses them. */
export type ResolvedServerOptions = z.output<typeof PhebyServerOptionsSchema>;

/**
 * Check `options` against {@link PhebyServerOptionsSchema} and fill in the defaults. Throws one
 * error naming every bad option (`createPhebyServer: deltaIntervalMs must be a number >= 0`).
 */
export function resolveServerOptions(options: PhebyServerOptions): ResolvedServerOptions {
  const parsed = PhebyServerOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map(
    (issue) => `${issue.path.join(".") || "options"} ${issue.message}`,
  );
  throw new Error(`createPhebyServer: ${problems.join("; ")}`);
}

/** True when A and B are mutually assignable. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The documented interface and the schema describe the same options: the same names, the same types.
const sameOptions: [
  Same<keyof PhebyServerOptions, keyof z.input<typeof PhebyServerOptionsSchema>>,
  Same<PhebyServerOptions, z.input<typeof PhebyServerOptionsSchema>>,
] = [true, true];
void sameOptions;
