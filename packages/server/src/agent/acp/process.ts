/**
 * One spawned ACP agent process and its JSON-RPC connection.
 *
 * It knows nothing of Pheby: the backend hands it the client-side handlers and
 * gets back `request`/`notify` with hang and crash detection. A request that
 * times out is treated as a hung agent: the process is killed, so every caller
 * waiting on it fails with one clear reason.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { setTimeout as delay } from "node:timers/promises";
import * as acp from "@agentclientprotocol/sdk";
import type { OsUser } from "../../agent-user/lookup.js";
import { spawnAs } from "../../agent-user/spawn.js";
import type { HostPaths } from "../../util/host-paths.js";
import type { AgentHost } from "../port.js";
import { HERMES_CLIENT_META, HERMES_NOTIFICATION_METHOD } from "./hermes.js";

/** Handlers for what the agent calls on us. */
export interface ClientHandlers {
  /** A `session/update`; must only enqueue (the SDK runs handlers concurrently). */
  update(notification: acp.SessionNotification): void;
  permission(
    params: acp.RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<acp.RequestPermissionResponse>;
  elicitation(
    params: acp.CreateElicitationRequest,
    signal: AbortSignal,
  ): Promise<acp.CreateElicitationResponse>;
  /** Hermes's `_hermes/notification` (background work that finished while the session was idle). */
  hermesNotification(params: unknown): void;
}

/** How to start the agent. */
export interface SpawnSpec {
  command: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Deadline of `initialize`. */
  startTimeoutMs: number;
  /** Run the agent as this OS user (umask 0007); absent: as Pheby's own user. */
  user?: OsUser;
  /** Log the agent's stderr lines verbatim (the operator allows chat content in the logs); else only their length. */
  logStderr: boolean;
}

/** The agent process ended; `message` says why in words fit for a `run.finished` error. */
export class AgentGoneError extends Error {
  override readonly name = "AgentGoneError";
}

/** How long a closed connection waits for the process exit before killing it. */
const EXIT_GRACE_MS = 2_000;

/**
 * After the agent's own process exits, how long its pipes may stay open. A launcher shim
 * (`npx`, `node_modules/.bin/*`) can die while the native agent it started keeps the pipes:
 * past this, the whole process group is killed so the exit is seen.
 */
const PIPE_GRACE_MS = 2_000;

const CLIENT_INFO = { name: "pheby", title: "Pheby", version: "1" };

/** A running agent process with an initialized ACP connection. */
export class AgentProcess {
  /** Resolves with the reason once the process is gone. */
  readonly exited: Promise<string>;
  /** What `initialize` returned. */
  init!: acp.InitializeResponse;
  private deathReason: string | null = null;
  private gone = false;
  private readonly connection: acp.ClientConnection;

  private constructor(
    private readonly child: ChildProcess,
    handlers: ClientHandlers,
    private readonly log: AgentHost["log"],
    logStderr: boolean,
  ) {
    this.exited = new Promise((resolve) => {
      const done = (why: string) => {
        if (this.gone) return;
        this.gone = true;
        resolve(this.deathReason ?? why);
      };
      const why = (code: number | null, signal: NodeJS.Signals | null) =>
        `the agent process exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`})`;
      child.once("error", (err) => done(`the agent could not be started: ${err.message}`));
      child.once("close", (code, signal) => {
        this.signalGroup("SIGKILL"); // nothing of the agent outlives it
        done(why(code, signal));
      });
      child.once("exit", (code, signal) => {
        // "close" follows once the pipes drain (the last updates still arrive); a descendant
        // holding them open must not hide the exit.
        setTimeout(() => {
          if (this.gone) return;
          this.signalGroup("SIGKILL");
          done(why(code, signal));
        }, PIPE_GRACE_MS).unref();
      });
    });
    // Writes after the child died must not surface as an uncaught EPIPE.
    child.stdin?.on("error", (err) => log.debug({ err: err.message }, "agent stdin error"));
    if (child.stderr) {
      const lines = createInterface({ input: child.stderr });
      // Agents print prompts, replies and tool output there: chat content, verbatim only when allowed.
      lines.on("line", (line) =>
        log.debug(
          logStderr ? { agentStderr: line.slice(0, 2000) } : { agentStderrChars: line.length },
          "agent stderr",
        ),
      );
    }
    const stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    );
    this.connection = acp
      .client({ name: "pheby" })
      .onRequest("session/request_permission", ({ params, signal }) => handlers.permission(params, signal))
      .onRequest("elicitation/create", ({ params, signal }) => handlers.elicitation(params, signal))
      .onNotification("session/update", ({ params }) => handlers.update(params))
      .onNotification(
        HERMES_NOTIFICATION_METHOD,
        (raw: unknown) => raw,
        ({ params }) => handlers.hermesNotification(params),
      )
      .connect(stream);
    this.connection.closed.catch(() => {});
  }

  /** Spawn the agent and run `initialize`; rejects with {@link AgentGoneError} if it dies or hangs. */
  static async start(
    spec: SpawnSpec,
    handlers: ClientHandlers,
    log: AgentHost["log"],
  ): Promise<AgentProcess> {
    const [file, ...args] = spec.command;
    if (!file) throw new AgentGoneError("no agent command is configured");
    // Its own process group: signals reach the agent's whole tree, shims and their children alike.
    const options = { cwd: spec.cwd, env: spec.env, stdio: "pipe", detached: true } as const;
    let child: ChildProcess;
    if (spec.user) {
      const as = spawnAs(spec.command, spec.user);
      child = spawn(as.file, as.args, { ...options, uid: as.uid, gid: as.gid });
    } else {
      child = spawn(file, args, options);
    }
    const proc = new AgentProcess(child, handlers, log, spec.logStderr);
    try {
      proc.init = await proc.request(
        "initialize",
        {
          protocolVersion: acp.PROTOCOL_VERSION,
          // Only what Pheby really implements: form elicitation (clarify), notices and compaction
          // (a completed one becomes a notice). No fs, no terminal.
          // `_meta` asks Hermes for its background notifications (an extension others ignore).
          clientCapabilities: {
            elicitation: { form: {} },
            session: { notices: {}, compaction: {} },
            _meta: { ...HERMES_CLIENT_META },
          },
          clientInfo: CLIENT_INFO,
        },
        spec.startTimeoutMs,
      );
    } catch (err) {
      proc.kill(`the agent failed to initialize: ${errorMessage(err)}`);
      await proc.exited;
      throw err instanceof AgentGoneError
        ? err
        : new AgentGoneError(`the agent failed to initialize: ${errorMessage(err)}`);
    }
    log.info({ agent: proc.init.agentInfo?.name ?? file, pid: child.pid }, "agent process ready");
    return proc;
  }

  /** The process is still running. */
  get alive(): boolean {
    return !this.gone;
  }

  /** The agent's name, for provider slugs and logs. */
  get agentName(): string {
    return this.init.agentInfo?.name ?? "agent";
  }

  /**
   * Send a request. With `timeoutMs`, no answer in time means the agent hung: it is killed.
   * Rejects with {@link AgentGoneError} when the process dies first, or with the agent's `RequestError`.
   */
  async request<T>(method: string, params: unknown, timeoutMs: number | null): Promise<T> {
    if (this.gone) throw new AgentGoneError(this.deathReason ?? "the agent process is not running");
    let timer: NodeJS.Timeout | undefined;
    const racers = [this.connection.agent.request<T>(method, params)];
    if (timeoutMs !== null) {
      racers.push(
        new Promise<T>((_, reject) => {
          timer = setTimeout(() => {
            this.kill(`the agent stopped responding (no answer to ${method} within ${timeoutMs} ms)`);
            reject(new AgentGoneError("timeout"));
          }, timeoutMs);
        }),
      );
    }
    try {
      return await Promise.race(racers);
    } catch (err) {
      if (err instanceof acp.RequestError) throw err;
      // The connection closed or timed out. A crashed process closes stdout just before it is
      // reaped, so give the exit a moment to arrive: its code is the clearer reason.
      if (!(err instanceof AgentGoneError)) {
        const exited = await Promise.race([this.exited, delay(EXIT_GRACE_MS).then(() => null)]);
        if (exited === null) this.kill(`lost the connection to the agent: ${errorMessage(err)}`);
      }
      throw new AgentGoneError(await this.exited);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Send a notification; failures (agent gone) are logged, never thrown. */
  notify(method: string, params: unknown): void {
    if (this.gone) return;
    this.connection.agent.notify(method, params).catch((err) => {
      this.log.debug({ err: errorMessage(err), method }, "agent notification failed");
    });
  }

  /** Kill the process now; `reason` becomes the error of every run it ends. */
  kill(reason: string): void {
    this.deathReason ??= reason;
    if (!this.gone) this.signalGroup("SIGKILL");
  }

  /** End the process group cleanly (EOF + SIGTERM), then SIGKILL after `timeoutMs`. */
  async shutdown(timeoutMs: number): Promise<void> {
    this.deathReason ??= "the Pheby server is shutting down";
    if (this.gone) return;
    this.child.stdin?.end();
    this.signalGroup("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const forced = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.signalGroup("SIGKILL");
        resolve();
      }, timeoutMs);
    });
    await Promise.race([this.exited, forced]);
    clearTimeout(timer);
    await this.exited;
    this.connection.close();
  }

  /** Signal the agent's process group (it leads one, see `start`); the agent alone if that fails. */
  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already gone.
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    }
  }
}

/** A short, log-safe message of any thrown value. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Longest agent error text passed on to a client. */
export const AGENT_ERROR_CHARS = 300;

/**
 * The words of an agent's JSON-RPC error: the message, with the details an agent puts in `data`
 * (Gemini CLI answers "Internal error" with `data.details`, Claude Code "Session not found").
 */
export function agentErrorWords(err: acp.RequestError): string {
  const data = err.data as { details?: unknown; message?: unknown } | string | null | undefined;
  const detail =
    typeof data === "string"
      ? data
      : typeof data?.details === "string"
        ? data.details
        : typeof data?.message === "string"
          ? data.message
          : null;
  const text = err.message.trim();
  if (!detail?.trim() || text.includes(detail.trim())) return text;
  return /^internal error$/i.test(text) ? detail.trim() : `${text}: ${detail.trim()}`;
}

/**
 * An agent's JSON-RPC error fit for a client: its words with the server's paths replaced,
 * secret-looking spans redacted and the whole cut to {@link AGENT_ERROR_CHARS}.
 */
export function agentErrorText(err: acp.RequestError, paths: HostPaths): string {
  return paths.clientText(agentErrorWords(err), AGENT_ERROR_CHARS);
}
