/**
 * Supervises the agent process: spawned on first need, respawned with
 * exponential backoff after a crash, restarted once idle when it holds a turn
 * that ignored its cancel, shut down on close. A process's death withdraws the
 * questions of the turns it was running.
 */
import type { InitializeResponse } from "@agentclientprotocol/sdk";
import { loginEnv } from "../../agent-user/spawn.js";
import { mcpToolTimeoutMs, sessionOf, takesHttpMcp } from "./mcp.js";
import type { AcpBackendOptions } from "./options.js";
import { AgentGoneError, AgentProcess, type ClientHandlers, errorMessage } from "./process.js";
import type { AcpState } from "./state.js";
import type { Turn } from "./turn.js";

/**
 * Cap of the respawn backoff. A request waits out the backoff before its spawn attempt, so this
 * bounds how late a run that needs a new agent process ends: within a few seconds, so a crashed
 * agent never leaves a conversation waiting long.
 */
const MAX_BACKOFF_MS = 5_000;

export class Supervisor {
  #proc: AgentProcess | null = null;
  #starting: Promise<AgentProcess> | null = null;
  #closed = false;
  #crashes = 0;
  #lastExitAt = 0;
  /** A process to restart as soon as no turn but abandoned ones runs in it, and why. */
  #retiring: { proc: AgentProcess; reason: string } | null = null;
  /** Processes ended on purpose: their exit is no crash. */
  readonly #restarted = new WeakSet<AgentProcess>();
  /** Turns under way, and the process each runs in. */
  readonly #turns = new Map<Turn, AgentProcess>();
  /** What the latest process said at `initialize` (kept after it exits). */
  lastInit: InitializeResponse | null = null;

  constructor(
    private readonly state: AcpState,
    private readonly handlers: ClientHandlers,
  ) {}

  /** The live process, if any (capabilities read it without starting one). */
  get current(): AgentProcess | null {
    return this.#proc;
  }

  /** The live agent process, spawned on first need and respawned (with backoff) after a crash. */
  process(): Promise<AgentProcess> {
    if (this.#closed) return Promise.reject(new AgentGoneError("the agent backend is closed"));
    if (this.#proc?.alive) return Promise.resolve(this.#proc);
    this.#starting ??= this.#spawn().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  /** A turn completed: the agent works, so the next crash starts the backoff over. */
  healthy(): void {
    this.#crashes = 0;
  }

  /**
   * Restart `proc` as soon as no turn other than abandoned ones runs in it (one process serves every
   * conversation: killing it under a running turn would fail that run). Returns true when that is
   * now: the process is being killed, and the next request gets a new one.
   */
  retire(proc: AgentProcess, reason: string): boolean {
    if (!proc.alive || this.#restarted.has(proc)) return true; // already on its way out
    if (this.#proc !== proc) return false;
    this.#retiring = { proc, reason };
    return this.#restartIfIdle();
  }

  /** A turn starts working in `proc` (from before it opens its session there). */
  track(turn: Turn, proc: AgentProcess): void {
    this.#turns.set(turn, proc);
  }

  /** A turn ended: restart a retiring process that has nothing left to do. */
  untrack(turn: Turn): void {
    this.#turns.delete(turn);
    this.#restartIfIdle();
  }

  #restartIfIdle(): boolean {
    const retiring = this.#retiring;
    if (!retiring) return false;
    for (const [turn, proc] of this.#turns) if (proc === retiring.proc && !turn.abandoned) return false;
    this.#retiring = null;
    if (this.#proc === retiring.proc) this.#proc = null; // the next request spawns a fresh one
    this.#restarted.add(retiring.proc);
    this.state.host.log.info({ reason: retiring.reason }, "restarting the agent");
    retiring.proc.kill(retiring.reason);
    return true;
  }

  /** Stop the agent: EOF and SIGTERM, then SIGKILL after the shutdown timeout. */
  async close(): Promise<void> {
    this.#closed = true;
    const proc = this.#proc ?? (await this.#starting?.catch(() => null));
    await proc?.shutdown(this.state.options.shutdownTimeoutMs ?? 5_000);
  }

  async #spawn(): Promise<AgentProcess> {
    const { options, host } = this.state;
    if (this.#crashes > 0) {
      const backoff = Math.min(
        (options.respawnBackoffMs ?? 1_000) * 2 ** (this.#crashes - 1),
        MAX_BACKOFF_MS,
      );
      const wait = this.#lastExitAt + backoff - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    let proc: AgentProcess;
    host.agentStatus?.("starting");
    try {
      proc = await AgentProcess.start(
        {
          command: options.command,
          cwd: options.cwd,
          env: agentEnv(options),
          startTimeoutMs: options.startTimeoutMs ?? 60_000,
          logStderr: host.logChatContent === true,
          ...(options.user ? { user: options.user } : {}),
        },
        this.handlers,
        host.log,
      );
    } catch (err) {
      this.#crashes++;
      this.#lastExitAt = Date.now();
      host.log.warn({ err: errorMessage(err) }, "agent failed to start");
      host.agentStatus?.("failed");
      throw err;
    }
    host.agentStatus?.("ready");
    this.#proc = proc;
    this.lastInit = proc.init;
    this.state.init = proc.init;
    // Pheby's MCP server for this process: its sessions name it in session/new|load|resume. The
    // grant (its token) ends with the process; a respawned agent gets a new one.
    const toolTimeoutMs = mcpToolTimeoutMs(proc.agentName);
    const grant = host.tools?.grant({
      agent: proc.agentName,
      ...(toolTimeoutMs === undefined ? {} : { toolTimeoutMs }),
      sessionOf: (call) => sessionOf(this.state, (openIn) => openIn === proc, call),
    });
    // An agent that takes HTTP MCP servers gets Pheby's in-process listener; the others a relay each.
    this.state.mcpServer = grant ? (takesHttpMcp(proc.init) ? grant.http : grant.stdio) : null;
    void proc.exited.then((reason) => {
      grant?.revoke();
      this.#exited(proc, reason);
    });
    return proc;
  }

  #exited(proc: AgentProcess, reason: string): void {
    if (this.#proc === proc) this.#proc = null;
    if (this.#retiring?.proc === proc) this.#retiring = null;
    if (this.#closed) return;
    if (!this.#proc && !this.#retiring) this.state.host.agentStatus?.("idle");
    if (!this.#restarted.has(proc)) {
      this.#crashes++;
      this.#lastExitAt = Date.now();
      this.state.host.log.warn({ reason }, "agent process exited");
    }
    for (const s of this.state.sessions.values()) if (s.openIn === proc) s.turn?.withdrawAll();
  }
}

/**
 * The agent's environment: ours without Pheby's own settings (the shared secret among them), then
 * the login variables of the agent's own user when it runs as one, then the operator's `env`.
 */
export function agentEnv(options: AcpBackendOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PHEBY_")) env[k] = v;
  return Object.assign(env, options.user ? loginEnv(options.user) : {}, options.env);
}
