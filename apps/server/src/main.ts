// pheby-server: reads config from env (+ optional YAML), picks the agent
// backend, starts @pheby/server and shuts down gracefully on SIGTERM/SIGINT.

import { createPhebyServer, prepareWorktreesDir } from "@pheby/server";
import { pino } from "pino";
import { agentCommandProblem } from "./agent-check.js";
import {
  agentBackend,
  agentCommandKeys,
  agentSpecs,
  serverAgentOptions,
  workspaceSpecs,
  worktreesDir,
} from "./agents.js";
import { help, parseArgs, version } from "./args.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { consoleDistDir } from "./console.js";
import { devicesCommand, rotateSecretCommand, worktreesCommand } from "./operator.js";
import { resolveSecret } from "./secret.js";

/** Bound on a graceful shutdown; systemd's default stop timeout (90 s) is far longer. */
const SHUTDOWN_DEADLINE_MS = 10_000;

async function main(): Promise<void> {
  const invocation = parseArgs(process.argv.slice(2));
  if (invocation.run === "help" || invocation.run === "version") {
    process.stdout.write(`${invocation.run === "help" ? help() : version()}\n`);
    return;
  }
  if (invocation.run === "unknown") {
    process.stderr.write(
      `pheby-server: unknown argument ${JSON.stringify(invocation.arg)}; settings come from the environment (pheby-server --help)\n`,
    );
    process.exit(2);
  }
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`pheby-server: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const io = {
    out: (line: string) => process.stdout.write(`${line}\n`),
    err: (line: string) => process.stderr.write(`${line}\n`),
  };
  if (invocation.run === "rotate-secret" || invocation.run === "devices") {
    process.exitCode =
      invocation.run === "rotate-secret"
        ? rotateSecretCommand(config, io)
        : devicesCommand(invocation.action, config, io);
    return;
  }
  if (invocation.run === "worktrees") {
    process.exitCode = await worktreesCommand(invocation.prune, config, io);
    return;
  }
  const agents = agentSpecs(config);
  const workspaces = workspaceSpecs(config);
  // Every agent's command and working directory, before anything is served or spawned: each agent
  // itself starts on first use, and a typo must not wait for that.
  for (const [i, agent] of agents.entries()) {
    if (agent.kind !== "acp") continue;
    const keys = agentCommandKeys(config, i);
    if (agent.user && process.getuid?.() !== 0) {
      // Only a root Pheby's child loses every capability when it switches to the agent's user; a
      // non-root Pheby given CAP_SETUID as an ambient capability would hand it on (docs/deployment.md).
      process.stderr.write(
        `pheby-server: ${keys.user} needs pheby-server to run as root (see docs/deployment.md, the agent as another user)\n`,
      );
      process.exit(2);
    }
    const problem = agentCommandProblem(agent.argv, agent.cwd, { ...process.env, ...agent.env });
    if (problem) {
      process.stderr.write(`pheby-server: ${problem} (${keys.command}, ${keys.cwd})\n`);
      process.exit(2);
    }
  }
  const logger = pino(
    {
      level: config.debug ? "debug" : "info",
      base: { service: "pheby" },
      // Belt and braces: the server never logs these, but a stray object must not leak them either.
      redact: {
        paths: ["secret", "*.secret", "authorization", "*.authorization", "headers.authorization"],
        censor: "[REDACTED]",
      },
    },
    // Synchronous writes: a write that meets EPIPE (the reader of stdout is gone) fails at once and
    // pino stops logging. pino's default asynchronous stream instead flushes synchronously at exit,
    // and sonic-boom's flushSync retries EPIPE forever, so SIGTERM never finished.
    pino.destination({ fd: 1, sync: true }),
  );
  const { secret, file } = resolveSecret(config.secret, config.data_dir);
  if (file)
    logger.info({ secretFile: file }, "no PHEBY_SECRET set: using the generated secret stored in this file");

  let staticConsoleDir: string | undefined;
  if (config.console) {
    const found = consoleDistDir();
    if ("error" in found) {
      process.stderr.write(`pheby-server: ${found.error}\n`);
      process.exit(2);
    }
    staticConsoleDir = found.dir;
  }

  // Before the backends: each resolves its allowed roots (the worktrees directory among them) now.
  const shareUser = agents.find((agent) => agent.kind === "acp" && agent.user);
  try {
    prepareWorktreesDir(worktreesDir(config), shareUser?.user?.gid);
  } catch (err) {
    const reason = (err as Error).message;
    // A configured directory must work; the default beside the data directory may be out of reach
    // (a data directory at the root of a container's file system): then only worktrees are refused.
    if (config.worktrees_dir !== undefined) {
      process.stderr.write(
        `pheby-server: cannot prepare the worktrees directory ${worktreesDir(config)} (PHEBY_WORKTREES_DIR / worktrees_dir): ${reason}\n`,
      );
      process.exit(2);
    }
    logger.warn(
      { dir: worktreesDir(config), err: reason },
      "cannot create the default worktrees directory: conversations cannot have worktrees until PHEBY_WORKTREES_DIR names one",
    );
  }
  const served = serverAgentOptions(
    agents.map((agent) => ({ spec: agent, backend: agentBackend(agent) })),
    workspaces,
  );

  const server = createPhebyServer({
    secret,
    dataDir: config.data_dir,
    ...(config.public_url ? { publicUrl: config.public_url } : {}),
    agents: served.agents,
    workspaces: served.workspaces,
    worktreesDir: worktreesDir(config),
    logger,
    logChatContent: config.log_chat_content,
    ...(shareUser?.user ? { agentShare: { dir: shareUser.sharedDir, gid: shareUser.user.gid } } : {}),
    ...(staticConsoleDir ? { staticConsoleDir } : {}),
    attachmentRetentionDays: config.attachment_retention_days,
    httpIdleTimeoutMs: config.http_idle_timeout_seconds * 1000,
    allowedFileRoots: served.allowedFileRoots,
    corsOrigins: config.cors_origins,
    deltaIntervalMs: config.delta_interval_ms,
    compression: config.ws_compression,
    resume: config.resume,
    replayLog: { maxEvents: config.replay_max_events, maxBytes: config.replay_max_bytes },
    heartbeatIntervalMs: config.heartbeat_interval_ms,
    lockout: {
      maxFailures: config.lockout_max_failures,
      windowMs: config.lockout_window_seconds * 1000,
      durationMs: config.lockout_duration_seconds * 1000,
    },
    trustedProxy: config.trusted_proxy,
    push: {
      preview: config.push_preview,
      allowPrivate: config.push_allow_private,
      ...(config.push_subject ? { subject: config.push_subject } : {}),
    },
    schedules: {
      missedGraceMs: config.schedules.missed_grace_seconds * 1000,
      ...(config.schedules.timezone ? { timezone: config.schedules.timezone } : {}),
    },
    agentTools: {
      enabled: agents[0]!.mcp.enabled,
      tools: agents[0]!.mcp.tools,
      askTimeoutMs: agents[0]!.mcp.ask_timeout_seconds * 1000,
    },
  });
  const { url } = await server.listen({ port: config.port, host: config.bind_host });
  // The ACP backend spawns its agent lazily. The single agent is brought up now, so one that cannot
  // start fails here, loudly, rather than as a failed run at the first chat; of several, each
  // starts on first use (their commands and directories were checked above).
  try {
    if (!config.agents) await served.agents[0]!.backend.ensureReady?.();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    logger.error({ err: reason }, "the agent failed to start");
    process.stderr.write(`pheby-server: the agent failed to start: ${reason}\n`);
    await server.close().catch(() => {});
    process.exit(1);
  }
  logger.info(
    {
      url: `${url.replace(/^http/, "ws")}/ws`,
      agents: agents.map((a) => `${a.id} (${a.kind})`),
      workspaces: workspaces.length,
      dataDir: config.data_dir,
      ...(staticConsoleDir ? { console: `${url}/console/` } : {}),
    },
    "pheby-server listening",
  );
  if (!config.public_url)
    logger.info(
      "PHEBY_PUBLIC_URL is not set: pairing phones by QR code is off until it names the URL phones reach /ws at",
    );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Whatever hangs (an agent that will not exit, a client that will not let go), shutdown ends.
    setTimeout(() => {
      logger.error({ ms: SHUTDOWN_DEADLINE_MS }, "shutdown took too long; exiting anyway");
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    logger.info({ signal }, "shutting down");
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `pheby-server: failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
