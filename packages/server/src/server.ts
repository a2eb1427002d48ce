import type { HttpBindings } from "@hono/node-server";
import type { Hono } from "hono";
import type { Logger } from "pino";
import { pathBaseOf } from "./activity/path-base.js";
import { createSimulatorBackend } from "./agent/simulator/index.js";
import { prepareShare } from "./agent-user/shared-dir.js";
import { type AgentSpec, resolvePlacement } from "./agents/config.js";
import { AgentRegistry } from "./agents/registry.js";
import { AttachmentStore, type SweepResult } from "./attachments/store.js";
import { AttachmentSweeps } from "./attachments/sweeps.js";
import { CredentialResolver } from "./auth/credentials.js";
import { Lockout } from "./auth/lockout.js";
import { OriginPolicy } from "./auth/origin.js";
import { Transfers } from "./auth/transfers.js";
import { Changes } from "./changes/service.js";
import { Connections } from "./connection/connection.js";
import { HistoryRefresh } from "./conversations/history.js";
import { Inbox } from "./conversations/inbox.js";
import { Decisions } from "./decisions/decisions.js";
import { Devices } from "./devices/devices.js";
import { DeviceRegistry } from "./devices/registry.js";
import { connectionExtensions } from "./extensions/index.js";
import { FileRoots } from "./files/roots.js";
import { GitRunner } from "./git/runner.js";
import type { ServerContext } from "./handlers/context.js";
import { Dispatcher } from "./handlers/index.js";
import { createAgentHost } from "./host/agent-host.js";
import { createHttpApp } from "./http/app.js";
import { loadConsoleFiles } from "./http/static-console.js";
import { serverLogger } from "./log.js";
import { mcpServerCommand } from "./mcp/command.js";
import { AgentToolsService } from "./mcp/service.js";
import {
  DEFAULT_HOST,
  DEFAULT_PORT,
  type PhebyServerOptions,
  type ResolvedServerOptions,
  resolveServerOptions,
} from "./options.js";
import { Fanout } from "./outbox/fanout.js";
import { eventOf, type Outbox } from "./outbox/outbox.js";
import { PushService } from "./push/service.js";
import { IdempotentRequests } from "./resume/idempotency.js";
import { ResumeOutbox } from "./resume/outbox.js";
import { AgentActivity } from "./runs/activity.js";
import { RunEngine } from "./runs/engine.js";
import { RunQueue } from "./runs/queue.js";
import { recoverAtStart } from "./runs/restart.js";
import { stopRevokedWork } from "./runs/revoked-work.js";
import { publishScheduleChanges } from "./schedules/events.js";
import { Scheduler } from "./schedules/scheduler.js";
import { Modes } from "./settings/modes.js";
import { Settings } from "./settings/settings.js";
import { Store } from "./store/store.js";
import { HttpListener, type ListenInfo } from "./transport/ws/listener.js";
import { HostPaths } from "./util/host-paths.js";
import { isTimers, systemTimers } from "./util/time.js";

export type { PhebyServerOptions } from "./options.js";

export type { ListenInfo } from "./transport/ws/listener.js";

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
  /** The options it was created with, checked and with their defaults. */
  options: ResolvedServerOptions;
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
  // Checked before the store opens, so a bad option leaves nothing open.
  const o = resolveServerOptions(options);
  // Before the store opens, so a missing console build fails without side effects.
  const consoleFiles = o.staticConsoleDir ? loadConsoleFiles(o.staticConsoleDir) : undefined;
  const tools = o.agentTools;
  // Resolved now, so a missing build of the MCP server fails at creation, not at an agent's first session.
  const mcpCommand = tools.enabled ? [...(tools.command ?? mcpServerCommand())] : [];
  const { clock } = o;
  const log = serverLogger(o.logger, o.logChatContent);
  const placement = resolvePlacement(o, () => createSimulatorBackend());
  const store = new Store(o.dataDir, { clock, resumeLogLimits: o.replayLog });
  const agents = new AgentRegistry(placement.agents, placement.workspaces, {
    conversation: (id) => store.getConversation(id),
    log,
  });
  // Rows from before the `workspaces` extension belong to the default agent and workspace.
  store.claimUnplaced(agents.defaultAgent.id, agents.defaultWorkspace.id);
  const resume = o.resume;
  recoverAtStart(store, clock.now(), resume, log);

  // The agent as another OS user: what both must reach lives in the shared directory.
  const share = o.agentShare && prepareShare(o.agentShare, o.dataDir);
  const attachments = new AttachmentStore({
    dataDir: o.dataDir,
    store,
    clock,
    log,
    retentionDays: o.attachmentRetentionDays,
    // The configured roots and every workspace (each agent's backend narrows to its own), never
    // anything inside the data directory.
    fileRoots: new FileRoots(
      [...o.allowedFileRoots, ...placement.workspaces.map((w) => w.path)],
      (root) => log.warn({ root }, "allowed file root does not exist; ignored"),
      [o.dataDir],
    ),
    ...(share ? { agentCopies: share.uploads } : {}),
  });

  // The core writes to `outbox`; an Outbox wrapper (resume log, push notifier) goes around the Fanout here.
  // The v1 copies of a long answer are thinned on the server's clock (a test's manual one, timers included).
  const thinning = o.deltaIntervalMs > 0 && o.thinV1Deltas;
  const fanout = new Fanout(
    thinning ? { thinning: { clock, timers: isTimers(clock) ? clock : systemTimers } } : {},
  );
  const push = new PushService(
    { dataDir: o.dataDir, store, clock, log, connected: () => fanout.peers() },
    o.push,
  );
  // Push notices every event first; the ResumeOutbox then stamps and logs it before the Fanout sends it.
  const replay = resume ? new ResumeOutbox(fanout, store.resumeLog) : undefined;
  // The inbox sees every event last, after the core's own state changed, and tells list viewers
  // (inbox peers) what it changed; its conversation.status passes push and the resume log untouched.
  let runs: RunEngine | undefined;
  let decisions: Decisions | undefined;
  const inbox = new Inbox({
    store,
    running: (id) => runs?.state(id) != null,
    pending: (id) => (decisions ? decisions.approvals(id).length + decisions.clarifications(id).length : 0),
    log,
  });
  const outbox: Outbox = inbox.wrap(push.wrap(replay ?? fanout));
  // Every status change of an agent, to the `workspaces` connections (no conversation: no seq).
  agents.onChange((agent) => outbox.publish(eventOf({ type: "agents.changed", agent })));
  const settings = new Settings(store.settings, agents, log);
  decisions = new Decisions({ outbox, clock, log, yolo: (id) => settings.yolo(id) });
  const activity = new AgentActivity({ store, outbox, clock });
  // The engine asks the modes for each turn's mode; the modes ask the engine whether a run nobody
  // started from a client is active (then no mode that approves without asking reaches its session).
  const modes = new Modes({
    store,
    settings,
    agents,
    outbox,
    clock,
    log,
    askingRun: (id) => runs?.askingRun(id) ?? false,
  });
  runs = new RunEngine({
    activity,
    store,
    attachments,
    outbox,
    agents,
    decisions,
    settings,
    modes,
    clock,
    log,
    logChatContent: o.logChatContent,
    deltaIntervalMs: o.deltaIntervalMs,
    cancelGraceMs: o.cancelGraceMs,
  });
  // `changes`: git only through the hardened runner; patches lose the server's own directories.
  const agentWorkdirs = agents
    .agents()
    .flatMap((a) => a.backend.workdir?.() ?? [])
    .concat(agents.workspaces().map((w) => w.path));
  const hostPaths = new HostPaths({
    dataDir: o.dataDir,
    workdirs: [process.cwd(), ...agentWorkdirs.flatMap((dir) => [dir, pathBaseOf(dir)])],
  });
  const changes = new Changes({
    store,
    git: new GitRunner(),
    agents,
    outbox,
    log,
    scrub: (text) => hostPaths.scrub(text),
  });
  // Observers of the runs, in this order: push first, then the queue (which may start the next run).
  // A run's push waits for its changes (`changes.changed`, the body's " · N files +A −D") only in a
  // git repository; elsewhere it goes at once.
  runs.onRun((event) => {
    if (event.type === "finished")
      changes.afterRun(event, (summary) =>
        push.runFinished(summary ? { ...event, changes: summary } : event),
      );
  });
  const queue = new RunQueue({ store, runs, attachments, outbox, clock, log });
  const scheduler = new Scheduler({
    store: store.schedules,
    clock,
    ...(isTimers(clock) ? { timers: clock } : {}),
    log,
    missedGraceMs: o.schedules.missedGraceMs,
    ...(o.schedules.timezone === undefined ? {} : { defaultTimezone: o.schedules.timezone }),
    conversationExists: (id) => store.getConversation(id) !== undefined,
    fire: (row) => queue.fireSchedule(row),
    changed: publishScheduleChanges(outbox),
  });
  const deviceRegistry = new DeviceRegistry(store.devices, clock);
  const credentials = new CredentialResolver(o.secret, deviceRegistry);
  const transfers = new Transfers();
  const devices = new Devices({
    registry: deviceRegistry,
    peers: () => fanout.peers(),
    transfers,
    clock,
    log,
    publicUrl: o.publicUrl,
  });
  // What a revoked device set in motion goes with it: queued runs, schedules, YOLO and modes that
  // approve without asking, its active runs.
  // (Its push subscriptions go by the database's cascading foreign key.)
  devices.onRevoked((deviceId) =>
    stopRevokedWork(deviceId, { queue, scheduler, runs, settings, modes, outbox, log }),
  );
  const ctx: ServerContext = {
    activity,
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
    modes,
    devices,
    agents,
    clock,
    log,
    history: new HistoryRefresh({ store, agents, log, running: (id) => runs.busy(id) }),
    historyPageBytes: o.historyPageBytes,
    push,
    inbox,
    changes,
  };
  // Pheby's MCP server: its bridge opens at start(), before the backend can spawn an agent.
  const agentTools = tools.enabled
    ? new AgentToolsService({
        tools: tools.tools,
        askTimeoutMs: tools.askTimeoutMs,
        command: mcpCommand,
        dataDir: o.dataDir,
        ...(share ? { shared: share.mcp } : {}),
        scheduler,
        runs,
        conversation: (id) => store.getConversation(id),
        conversationOfSession: (sessionId) => store.conversationBySession(sessionId)?.id ?? null,
        // The same rule as failed hellos, counted apart: the MCP listener's peers are all local.
        lockout: new Lockout(o.lockout, clock),
        log,
      })
    : undefined;
  // One host per agent: its sessions are its own (sessions are keyed by agent and session id).
  const hostOf = (agent: AgentSpec) =>
    createAgentHost({
      activity,
      store,
      outbox,
      runs,
      modes,
      agentId: agent.id,
      status: (status) => agents.report(agent.id, status),
      source: agent.backend.name,
      workspaces: agents
        .workspaces()
        .filter((w) => w.agents.includes(agent.id))
        .map((w) => w.path),
      clock,
      tools: agentTools?.tools,
      dataDir: o.dataDir,
      logChatContent: o.logChatContent,
      log,
    });
  // One lockout for both transports: failed HTTP auth counts like a failed hello.
  const lockout = new Lockout(o.lockout, clock);
  const connections = new Connections({
    ctx,
    dispatcher: new Dispatcher(),
    fanout,
    settings: {
      authenticate: (secret) => credentials.resolve(secret),
      lockout,
      authTimeoutMs: o.authTimeoutMs,
      serverName: o.serverName,
    },
    extensions: connectionExtensions(ctx),
  });
  const app = createHttpApp({
    log,
    attachments,
    store,
    decisions,
    authenticate: (presented) => credentials.resolve(presented),
    lockout,
    trustedProxy: o.trustedProxy,
    transfers,
    idleTimeoutMs: o.httpIdleTimeoutMs,
    corsOrigins: o.corsOrigins,
    consoleFiles,
  });
  // The bounded table of sent requests is pruned on the attachment sweep's beat.
  const sweeps = new AttachmentSweeps(attachments, log, () => store.sentRequests.sweep());
  let started: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  const transports: { close(): Promise<void> }[] = [];

  return {
    connections,
    app,
    log,
    options: o,
    start() {
      started ??= (async () => {
        await agentTools?.open();
        // Each backend gets its host now; agents themselves come up on first use.
        await Promise.all([agents.start(hostOf), sweeps.atStart()]);
        sweeps.schedule();
        // Follow-ups queued before a restart start once the agent is up; then runs missed while the
        // server was down (within the grace) start, once each, behind them.
        queue.startAfterRestart();
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
        sweeps.stop();
        scheduler.close();
        runs.shutdown();
        for (const transport of transports) await transport.close();
        await agents.close();
        await agentTools?.close();
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
  const { log, options: o } = core;
  // Closed with the core after active runs have failed and before the backend stops.
  const listener = new HttpListener(core.connections, core.app.fetch, {
    log,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    maxBufferedBytes: o.maxBufferedBytes,
    compression: o.compression,
    // One list for both: the origins CORS lets call the HTTP routes may open the socket too.
    origins: new OriginPolicy(o.publicUrl, o.corsOrigins),
    trustedProxy: o.trustedProxy,
    idleTimeoutMs: o.httpIdleTimeoutMs,
  });
  core.attach(listener);

  return {
    async listen(opts = {}) {
      if (core.closed) throw new Error("server is closed");
      if (listener.listening) throw new Error("server is already listening");
      await core.start();
      return listener.listen(opts.port ?? DEFAULT_PORT, opts.host ?? DEFAULT_HOST);
    },

    close: () => core.close(),

    sweepAttachments: () => core.sweepAttachments(),
  };
}
