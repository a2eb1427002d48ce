import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import type { HttpBindings } from "@hono/node-server";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import type { Logger } from "pino";
import type { AgentBackend, AgentHost } from "./agent/port.js";
import { createSimulatorBackend } from "./agent/simulator/index.js";
import { type AgentShare, prepareShare } from "./agent-user/shared-dir.js";
import { AttachmentStore, type SweepResult } from "./attachments/store.js";
import { isTrustedProxySetting, type TrustedProxy } from "./auth/address.js";
import { CredentialResolver } from "./auth/credentials.js";
import { Lockout } from "./auth/lockout.js";
import { OriginPolicy } from "./auth/origin.js";
import { Transfers } from "./auth/transfers.js";
import { Connections } from "./connection/connection.js";
import { HistoryRefresh } from "./conversations/history.js";
import { applySessionTitle } from "./conversations/titles.js";
import { Decisions } from "./decisions/decisions.js";
import { Devices } from "./devices/devices.js";
import { DeviceRegistry } from "./devices/registry.js";
import { isPublicWebSocketUrl } from "./devices/uri.js";
import { connectionExtensions } from "./extensions/index.js";
import { FileRoots } from "./files/roots.js";
import type { ServerContext } from "./handlers/context.js";
import { Dispatcher } from "./handlers/index.js";
import { createHttpApp } from "./http/app.js";
import { loadConsoleFiles, mountConsole } from "./http/static-console.js";
import { serverLogger } from "./log.js";
import { agentTools, DEFAULT_ASK_TIMEOUT_MS } from "./mcp/agent-tools.js";
import { McpBridge, ToolError } from "./mcp/bridge.js";
import { mcpServerCommand } from "./mcp/command.js";
import { AGENT_TOOL_NAMES, type AgentToolName } from "./mcp/tools.js";
import { Fanout } from "./outbox/fanout.js";
import type { Origin, Outbox } from "./outbox/outbox.js";
import { type PushOptions, PushService } from "./push/service.js";
import { IdempotentRequests } from "./resume/idempotency.js";
import { ResumeOutbox } from "./resume/outbox.js";
import { recoverInterruptedRuns } from "./resume/recover.js";
import { DEFAULT_CANCEL_GRACE_MS, RunEngine } from "./runs/engine.js";
import { RunQueue } from "./runs/queue.js";
import { stopRevokedWork } from "./runs/revoked-work.js";
import { checkTimezone, DEFAULT_MISSED_GRACE_MS } from "./schedules/rules.js";
import { Scheduler } from "./schedules/scheduler.js";
import { scheduleView } from "./schedules/view.js";
import { Settings } from "./settings/settings.js";
import { forgetRevokedDevices } from "./store/creators.js";
import { DEFAULT_RESUME_LOG_LIMITS, type ResumeLogLimits } from "./store/resume-log.js";
import { type ConversationRow, Store } from "./store/store.js";
import { WsTransport } from "./transport/ws/server.js";
import { newId } from "./util/ids.js";
import { type Clock, systemClock, systemTimers, type Timers } from "./util/time.js";

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
  /** The agent backend; default {@link createSimulatorBackend}(). */
  agent?: AgentBackend;
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

/** Where a server listens. `url` is the HTTP base URL; the socket is at `ws://host:port/ws`. */
export interface ListenInfo {
  port: number;
  host: string;
  url: string;
}

/** A Pheby Protocol v1 server. */
export interface PhebyServer {
  /** Start the backend and listen (default 127.0.0.1:8620; port 0 picks a free port). */
  listen(opts?: { port?: number; host?: string }): Promise<ListenInfo>;
  /**
   * Shut down: active runs are finished as failed, sockets are closed with
   * 1001 going-away, the backend is stopped and the database closed.
   */
  close(): Promise<void>;
  /**
   * Run the attachment sweep now (it also runs at `listen()` and hourly):
   * expired blobs and their rows, and orphaned temp files, are deleted.
   */
  sweepAttachments(): Promise<SweepResult>;
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
/** How often the attachment sweep runs. */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * The server without a network listener: store, core, connections and the HTTP
 * app. {@link createPhebyServer} serves it over ws and HTTP; tests (and later
 * other transports) open connections on `connections` directly, e.g. with
 * `transport/memory.ts`. Internal: not part of the package's API.
 */
export interface ServerCore {
  /** Where transports open a Connection for each of theirs. */
  connections: Connections;
  /** The Hono app of the HTTP routes (attachments, health, console). */
  app: Hono<{ Bindings: HttpBindings }>;
  log: Logger;
  httpIdleTimeoutMs: number;
  /** Start the backend and the attachment sweeps (once; later calls share the first). */
  start(): Promise<void>;
  /** Closed with the core, in the order attached, after active runs have failed and before the backend stops. */
  attach(transport: { close(): Promise<void> }): void;
  /**
   * Shut down: active runs are finished as failed, transports closed, the
   * backend stopped and the database closed. Idempotent.
   */
  close(): Promise<void>;
  readonly closed: boolean;
  sweepAttachments(): Promise<SweepResult>;
}

/**
 * Build the {@link ServerCore}. Opening the store happens here (so a bad data
 * directory fails fast); runs left `running` by a crash or an unclean stop
 * are recorded as failed, so `conversation.open` shows `run: null` for them.
 */
export function createServerCore(options: PhebyServerOptions): ServerCore {
  if (typeof options.secret !== "string" || options.secret === "") {
    throw new Error("createPhebyServer: a non-empty secret is required");
  }
  // Checked before the store opens, so a bad option leaves nothing open.
  if (options.publicUrl !== undefined && !isPublicWebSocketUrl(options.publicUrl)) {
    throw new Error(
      "createPhebyServer: publicUrl must be a ws:// or wss:// URL without credentials, query or fragment",
    );
  }
  const trustedProxy = options.trustedProxy ?? "loopback";
  if (!isTrustedProxySetting(trustedProxy)) {
    throw new Error('createPhebyServer: trustedProxy must be "loopback", "none" or a list of IP addresses');
  }
  const deltaIntervalMs = options.deltaIntervalMs ?? DEFAULT_DELTA_INTERVAL_MS;
  if (!Number.isFinite(deltaIntervalMs) || deltaIntervalMs < 0) {
    throw new Error("createPhebyServer: deltaIntervalMs must be a number >= 0");
  }
  // Before the store opens, so a missing console build fails without side effects.
  const consoleFiles = options.staticConsoleDir ? loadConsoleFiles(options.staticConsoleDir) : undefined;
  const missedGraceMs = options.schedules?.missedGraceMs ?? DEFAULT_MISSED_GRACE_MS;
  if (!Number.isFinite(missedGraceMs) || missedGraceMs < 0) {
    throw new Error("createPhebyServer: schedules.missedGraceMs must be a number >= 0");
  }
  if (options.schedules?.timezone !== undefined) {
    try {
      checkTimezone(options.schedules.timezone);
    } catch {
      throw new Error("createPhebyServer: schedules.timezone must be an IANA time zone");
    }
  }
  const tools = options.agentTools ?? {};
  const toolsEnabled = tools.enabled ?? true;
  const askTimeoutMs = tools.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS;
  if (!Number.isInteger(askTimeoutMs) || askTimeoutMs < 1_000) {
    throw new Error("createPhebyServer: agentTools.askTimeoutMs must be a whole number of ms >= 1000");
  }
  const toolNames = tools.tools ?? AGENT_TOOL_NAMES;
  if (toolNames.some((t) => !AGENT_TOOL_NAMES.includes(t))) {
    throw new Error(`createPhebyServer: agentTools.tools must be some of ${AGENT_TOOL_NAMES.join(", ")}`);
  }
  // Resolved now, so a missing build of the MCP server fails at creation, not at an agent's first session.
  const mcpCommand = toolsEnabled ? [...(tools.command ?? mcpServerCommand())] : [];
  const clock = options.clock ?? systemClock;
  const log = serverLogger(options.logger, options.logChatContent ?? false);
  const backend = options.agent ?? createSimulatorBackend();
  const resumeLogLimits = { ...DEFAULT_RESUME_LOG_LIMITS, ...options.replayLog };
  for (const [name, value] of Object.entries(resumeLogLimits)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`createPhebyServer: replayLog.${name} must be a whole number >= 1`);
    }
  }
  const store = new Store(options.dataDir, { clock, resumeLogLimits });
  const resume = options.resume ?? true;
  // Recorded failed, and what that did logged, so a client that resumes after the restart learns it.
  const interrupted = recoverInterruptedRuns(
    store,
    clock.now(),
    "The server stopped during this run",
    resume,
  );
  if (interrupted > 0)
    log.info({ runs: interrupted }, "runs interrupted by the last shutdown recorded as failed");

  const retentionDays = options.attachmentRetentionDays ?? DEFAULT_ATTACHMENT_RETENTION_DAYS;
  if (!Number.isInteger(retentionDays) || retentionDays < 0) {
    throw new Error("createPhebyServer: attachmentRetentionDays must be a whole number >= 0");
  }
  const httpIdleTimeoutMs = options.httpIdleTimeoutMs ?? DEFAULT_HTTP_IDLE_TIMEOUT_MS;
  if (!Number.isInteger(httpIdleTimeoutMs) || httpIdleTimeoutMs < 1) {
    throw new Error("createPhebyServer: httpIdleTimeoutMs must be a whole number of ms >= 1");
  }
  const historyPageBytes = options.historyPageBytes ?? DEFAULT_HISTORY_PAGE_BYTES;
  if (!Number.isInteger(historyPageBytes) || historyPageBytes < 1) {
    throw new Error("createPhebyServer: historyPageBytes must be a whole number >= 1");
  }
  // The agent as another OS user: what both must reach lives in the shared directory.
  const share = options.agentShare && prepareShare(options.agentShare, options.dataDir);
  const attachments = new AttachmentStore({
    dataDir: options.dataDir,
    store,
    clock,
    log,
    retentionDays,
    fileRoots: new FileRoots(options.allowedFileRoots ?? [], (root) =>
      log.warn({ root }, "allowed file root does not exist; ignored"),
    ),
    ...(share ? { agentCopies: share.uploads } : {}),
  });

  // The core writes to `outbox`; an Outbox wrapper (resume log, push notifier) goes around the Fanout here.
  // The v1 copies of a long answer are thinned on the server's clock (a test's manual one, timers included).
  const thinning = deltaIntervalMs > 0 && options.thinV1Deltas !== false;
  const fanout = new Fanout(
    thinning ? { thinning: { clock, timers: isTimers(clock) ? clock : systemTimers } } : {},
  );
  const push = new PushService(
    { dataDir: options.dataDir, store, clock, log, connected: () => fanout.peers() },
    options.push,
  );
  // Push notices every event first; the ResumeOutbox then stamps and logs it before the Fanout sends it.
  const replay = resume ? new ResumeOutbox(fanout, store.resumeLog) : undefined;
  const outbox: Outbox = push.wrap(replay ?? fanout);
  const settings = new Settings(store.settings, backend, log);
  const decisions = new Decisions({ outbox, clock, log, yolo: (id) => settings.yolo(id) });
  const runs = new RunEngine({
    store,
    attachments,
    outbox,
    backend,
    decisions,
    settings,
    clock,
    log,
    logChatContent: options.logChatContent ?? false,
    deltaIntervalMs,
    cancelGraceMs: options.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS,
    runEnded: (conversationId, ended) => queue.next(conversationId, ended),
  });
  const queue = new RunQueue({ store, runs, attachments, outbox, clock, log });
  const scheduler = new Scheduler({
    store: store.schedules,
    clock,
    ...(isTimers(clock) ? { timers: clock } : {}),
    log,
    missedGraceMs,
    ...(options.schedules?.timezone === undefined ? {} : { defaultTimezone: options.schedules.timezone }),
    conversationExists: (id) => store.getConversation(id) !== undefined,
    fire: async (row) => {
      const conv = store.getConversation(row.conversation_id);
      return conv ? queue.serverPrompt(conv, row.prompt, row) : "gone";
    },
    // Every change reaches the `schedules` connections. A request's origin gets it as its reply
    // (request_id on its copy), except a creation, whose reply is schedule.created.
    changed: ({ schedule, deleted, created, origin }) => {
      const from = origin as Origin | undefined;
      outbox.publish({
        message: { type: "schedule.changed", schedule: scheduleView(schedule), deleted },
        conversationId: null,
        ...(created ? (from?.peer ? { except: from.peer } : {}) : from ? { replyTo: from } : {}),
      });
    },
  });
  const deviceRegistry = new DeviceRegistry(store.devices, clock);
  const credentials = new CredentialResolver(options.secret, deviceRegistry);
  const transfers = new Transfers();
  const devices = new Devices({
    registry: deviceRegistry,
    peers: () => fanout.peers(),
    transfers,
    clock,
    log,
    publicUrl: options.publicUrl,
  });
  // What a revoked device set in motion goes with it: queued runs, schedules, YOLO, its active runs.
  // (Its push subscriptions go by the database's cascading foreign key.)
  devices.onRevoked((deviceId) =>
    stopRevokedWork(deviceId, { queue, scheduler, runs, settings, outbox, log }),
  );
  // What devices revoked while the server was down (`devices revoke-all`) left behind goes now.
  const forgotten = forgetRevokedDevices(store.db);
  if (forgotten.schedules + forgotten.queuedRuns + forgotten.yolo > 0)
    log.info(forgotten, "work of revoked devices removed");
  const ctx: ServerContext = {
    store,
    attachments,
    outbox,
    runs,
    queue,
    resume: replay,
    sends: new IdempotentRequests(store.sentRequests),
    scheduler,
    decisions,
    settings,
    devices,
    backend,
    clock,
    log,
    history: new HistoryRefresh({ store, backend, log, running: (id) => runs.busy(id) }),
    historyPageBytes,
    push,
  };
  // Pheby's MCP server: its bridge opens at start(), before the backend can spawn an agent.
  let bridge: McpBridge | undefined;
  const conversationOf = (id: string) => {
    const conv = store.getConversation(id);
    if (!conv) throw new ToolError("The conversation was deleted.");
    return conv;
  };
  const runTool = agentTools({
    scheduler,
    askTimeoutMs,
    ask: (id, question, withdraw) => {
      const asked = runs.ask(id, question, withdraw);
      if (!asked) {
        throw new ToolError("Pheby can ask the user only while you answer a message in this conversation.");
      }
      return asked;
    },
    notify: (id, title, body) => {
      runs.unsolicited(conversationOf(id), `${title}\n\n${body}`).catch((err) => {
        log.error({ err }, "notify_user message failed");
      });
    },
    sendFile: async (id, path, caption) => {
      const delivered = await runs.deliverFile(conversationOf(id), path, caption);
      if (!delivered) {
        throw new ToolError(
          "Pheby did not send the file: it must be a regular file inside the directories Pheby may deliver from.",
        );
      }
      return delivered;
    },
  });
  const openBridge = () => {
    if (!bridge) throw new Error("Pheby's MCP bridge is not open");
    return bridge;
  };
  const conversationIdOf = (sessionId: string) => store.conversationBySession(sessionId)?.id ?? null;
  /** A run the agent's output outside any turn starts, in the conversation of its session. */
  const serverRun = (what: string, sessionId: string, start: (conv: ConversationRow) => Promise<unknown>) => {
    const conv = store.conversationBySession(sessionId);
    if (!conv) {
      log.warn({ session: sessionId }, `${what} for an unknown session dropped`);
      return;
    }
    start(conv).catch((err) => log.error({ err }, `${what} failed`));
  };
  const host: AgentHost = {
    unsolicited: (message) =>
      serverRun("unsolicited output", message.sessionId, (conv) =>
        runs.unsolicited(conv, message.text, message.kind),
      ),
    wake: (message) =>
      serverRun("wake-up", message.sessionId, (conv) => runs.wake(conv, message.text, message.meta)),
    tools: toolsEnabled
      ? {
          names: toolNames,
          grant: (caller) =>
            openBridge().grant({
              ...(caller.agent === undefined ? {} : { agent: caller.agent }),
              ...(caller.toolTimeoutMs === undefined ? {} : { toolTimeoutMs: caller.toolTimeoutMs }),
              conversationOf: async (call) => {
                const session = await caller.sessionOf(call);
                return session === null ? null : conversationIdOf(session);
              },
            }),
          call: (sessionId, tool, args) =>
            openBridge().call({ conversationOf: async () => conversationIdOf(sessionId) }, tool, args),
        }
      : undefined,
    sessionTitle(sessionId, title) {
      applySessionTitle(store, outbox, sessionId, title);
    },
    hideSession(sessionId) {
      store.hideSession({ id: newId(), session_id: sessionId, source: backend.name, at: clock.now() });
    },
    serverPaths: { dataDir: resolve(options.dataDir), workdir: process.cwd() },
    logChatContent: options.logChatContent ?? false,
    log,
  };
  // One lockout for both transports: failed HTTP auth counts like a failed hello.
  const lockout = new Lockout({ ...DEFAULT_LOCKOUT, ...options.lockout }, clock);
  const connections = new Connections({
    ctx,
    dispatcher: new Dispatcher(),
    fanout,
    settings: {
      authenticate: (secret) => credentials.resolve(secret),
      lockout,
      authTimeoutMs: options.authTimeoutMs ?? 10_000,
      serverName: options.serverName ?? "pheby",
    },
    extensions: connectionExtensions(ctx),
  });
  const app = createHttpApp(
    log,
    {
      attachments,
      store,
      authenticate: (presented) => credentials.resolve(presented),
      lockout,
      trustedProxy,
      transfers,
      log,
      idleTimeoutMs: httpIdleTimeoutMs,
    },
    options.corsOrigins ?? [],
    {
      decisions,
      authenticate: (presented) => credentials.resolve(presented),
      lockout,
      trustedProxy,
      transfers,
      log,
    },
  );
  if (consoleFiles) mountConsole(app, consoleFiles);
  const sweep = () => {
    store.sentRequests.sweep();
    return attachments.sweep().catch((err: unknown) => {
      log.error({ err }, "attachment sweep failed");
      return { expired: 0, temps: 0, orphans: 0 };
    });
  };
  let sweepTimer: NodeJS.Timeout | undefined;
  let started: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  const transports: { close(): Promise<void> }[] = [];

  return {
    connections,
    app,
    log,
    httpIdleTimeoutMs,
    start() {
      // The start sweep also removes what a crash left: temp files and unindexed blobs.
      started ??= (async () => {
        if (toolsEnabled) {
          bridge = await McpBridge.open({
            dataDir: options.dataDir,
            ...(share ? { shared: share.mcp } : {}),
            tools: toolNames,
            command: mcpCommand,
            askTimeoutSeconds: Math.round(askTimeoutMs / 1000),
            timezone: scheduler.defaultTimezone,
            run: runTool,
            // The same rule as failed hellos, counted apart: the MCP listener's peers are all local.
            lockout: new Lockout({ ...DEFAULT_LOCKOUT, ...options.lockout }, clock),
            log,
          });
        }
        await Promise.all([backend.start(host), attachments.sweep(true)]);
        sweepTimer ??= setInterval(sweep, SWEEP_INTERVAL_MS);
        sweepTimer.unref();
        // Follow-ups queued before a restart start once the agent is up; then runs missed while the
        // server was down (within the grace) start, once each, behind them.
        queue.resume();
        scheduler.start();
      })();
      return started;
    },
    attach(transport) {
      transports.push(transport);
    },
    get closed() {
      return closing !== undefined;
    },
    close() {
      closing ??= (async () => {
        clearInterval(sweepTimer);
        scheduler.close();
        runs.shutdown();
        for (const transport of transports) await transport.close();
        try {
          await backend.close();
        } catch (err) {
          log.warn({ err }, "agent backend did not close cleanly");
        }
        await bridge?.close();
        await attachments.idle();
        await push.close();
        store.close();
        log.info("closed");
      })();
      return closing;
    },
    sweepAttachments: () => attachments.sweep(),
  };
}

/**
 * Create a Pheby server. Opening the store happens here (so a bad data
 * directory fails fast); runs left `running` by a crash or an unclean stop
 * are recorded as failed, so `conversation.open` shows `run: null` for them.
 */
export function createPhebyServer(options: PhebyServerOptions): PhebyServer {
  const core = createServerCore(options);
  const { log, httpIdleTimeoutMs } = core;
  const sockets = new WsTransport(core.connections, {
    log,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 30_000,
    maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    compression: options.compression ?? true,
    // One list for both: the origins CORS lets call the HTTP routes may open the socket too.
    origins: new OriginPolicy(options.publicUrl, options.corsOrigins ?? []),
    trustedProxy: options.trustedProxy ?? "loopback", // validated by createServerCore
  });
  core.attach(sockets);
  let http: Server | undefined;
  // The HTTP server closes after the sockets (its upgraded connections are theirs) and before the backend.
  core.attach({
    close: async () => {
      const server = http;
      if (!server) return;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  });

  return {
    async listen(opts = {}) {
      if (core.closed) throw new Error("server is closed");
      if (http) throw new Error("server is already listening");
      await core.start();
      const server = createServer(getRequestListener(core.app.fetch));
      // Node's requestTimeout (300 s for a whole request) cut slow phone uploads; an idle timeout
      // bounds stalled peers instead. Upgraded sockets are exempt: ws clears the timeout.
      server.requestTimeout = 0;
      server.timeout = httpIdleTimeoutMs;
      http = server;
      server.on("upgrade", (req, socket, head) => sockets.handleUpgrade(req, socket, head));
      const wantHost = opts.host ?? DEFAULT_HOST;
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(opts.port ?? DEFAULT_PORT, wantHost, () => {
          server.off("error", reject);
          resolve();
        });
      });
      const { port } = server.address() as AddressInfo;
      const urlHost = wantHost.includes(":") ? `[${wantHost}]` : wantHost;
      log.info({ host: wantHost, port }, "listening");
      return { port, host: wantHost, url: `http://${urlHost}:${port}` };
    },

    close: () => core.close(),

    sweepAttachments: () => core.sweepAttachments(),
  };
}

/** Whether a clock also schedules (a test's manual clock): then it drives the scheduler's timer. */
function isTimers(clock: Clock): clock is Clock & Timers {
  const c = clock as Partial<Timers>;
  return typeof c.setTimeout === "function" && typeof c.clearTimeout === "function";
}
