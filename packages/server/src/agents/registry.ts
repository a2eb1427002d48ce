/**
 * The agents of a server and the workspaces they work in (the `workspaces` extension): which
 * backend answers a conversation, each agent's status, and the working directory of a
 * conversation. Every per-conversation backend call goes through {@link AgentRegistry.backendOf}.
 *
 * Each backend supervises its own agent (the ACP backend respawns its process), so one agent's
 * crash or hang stays inside its backend; the registry only tracks whether it was brought up.
 */
import type { Logger } from "pino";
import type { AgentBackend, AgentHost } from "../agent/port.js";
import type { ConversationRow } from "../store/store.js";
import type { AgentSpec, WorkspaceSpec } from "./config.js";

/** An agent's status as clients see it. */
export type AgentStatus = "idle" | "starting" | "ready" | "failed";

/** One agent as `agents.snapshot` lists it. */
export interface AgentView {
  agent_id: string;
  name: string;
  status: AgentStatus;
}

/** What a conversation row tells of its placement (null: a row older than the `workspaces` extension). */
export type Placed = Pick<ConversationRow, "agent_id" | "workspace_id" | "workdir">;

interface Entry extends AgentSpec {
  status: AgentStatus;
  activation?: Promise<void>;
}

/** See the file comment. */
export class AgentRegistry {
  readonly #agents: Entry[];
  readonly #byId = new Map<string, Entry>();
  readonly #workspaces: WorkspaceSpec[];
  readonly #listeners: ((agent: AgentView) => void)[] = [];

  constructor(
    agents: readonly AgentSpec[],
    workspaces: readonly WorkspaceSpec[],
    private readonly deps: {
      /** The placement of a live conversation (undefined: none). */
      conversation(id: string): Placed | undefined;
      log: Logger;
    },
  ) {
    this.#agents = agents.map((a) => ({ ...a, status: "idle" as AgentStatus }));
    for (const a of this.#agents) this.#byId.set(a.id, a);
    this.#workspaces = [...workspaces];
  }

  /** The default agent: the first listed. */
  get defaultAgent(): AgentSpec {
    return this.#agents[0]!;
  }

  /** The default workspace: the first that allows the default agent. */
  get defaultWorkspace(): WorkspaceSpec {
    const id = this.defaultAgent.id;
    return this.#workspaces.find((w) => w.agents.includes(id)) ?? this.#workspaces[0]!;
  }

  agents(): readonly AgentSpec[] {
    return this.#agents;
  }

  agent(id: string): AgentSpec | undefined {
    return this.#byId.get(id);
  }

  workspaces(): readonly WorkspaceSpec[] {
    return this.#workspaces;
  }

  workspace(id: string): WorkspaceSpec | undefined {
    return this.#workspaces.find((w) => w.id === id);
  }

  /** The agent of a conversation (row or id); the default agent for unknown ids and older rows. */
  agentOf(conv: string | Placed): AgentSpec {
    const row = typeof conv === "string" ? this.deps.conversation(conv) : conv;
    return (row?.agent_id && this.#byId.get(row.agent_id)) || this.#agents[0]!;
  }

  /**
   * The backend answering a conversation: its own agent's. Looking does not bring the agent up (a
   * mode switch or a modes list never starts one); {@link use} does.
   */
  backendOf(conv: string | Placed): AgentBackend {
    return this.agentOf(conv).backend;
  }

  /**
   * The backend of an agent (by id) or of a conversation, for a call that needs the agent running
   * (a session, a turn, the catalogue): its first use brings the agent up (`agents.changed`).
   */
  use(target: { agentId: string } | string | Placed): AgentBackend {
    const entry =
      typeof target === "object" && "agentId" in target
        ? (this.#byId.get(target.agentId) ?? this.#agents[0]!)
        : (this.agentOf(target) as Entry);
    void this.#activate(entry as Entry);
    return entry.backend;
  }

  /**
   * A conversation's working directory (never on the wire): its own (a worktree's), else its
   * workspace's path, else the default workspace's.
   */
  workdirOf(conv: Placed): string {
    if (conv.workdir) return conv.workdir;
    return ((conv.workspace_id && this.workspace(conv.workspace_id)) || this.defaultWorkspace).path;
  }

  /** Every agent with its status, in configuration order. */
  views(): AgentView[] {
    return this.#agents.map(view);
  }

  status(agentId: string): AgentStatus | undefined {
    return this.#byId.get(agentId)?.status;
  }

  /** Called on every status change of any agent. */
  onChange(listener: (agent: AgentView) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Hand every backend its host (`hostFor` builds one per agent, bound to its sessions). Cheap:
   * backends spawn their agent on first need, not here (the ACP backend's rule).
   */
  async start(hostFor: (agent: AgentSpec) => AgentHost): Promise<void> {
    await Promise.all(this.#agents.map((a) => a.backend.start(hostFor(a))));
  }

  /** Bring an agent up now (its first use) and wait for the outcome; never throws. */
  async ensure(agentId: string): Promise<AgentStatus | undefined> {
    const entry = this.#byId.get(agentId);
    if (!entry) return undefined;
    await this.#activate(entry);
    return entry.status;
  }

  /**
   * What an agent's backend says of its process (`AgentHost.agentStatus`): a crash makes it `idle`
   * (spawned again on next use), a respawn `starting` then `ready` or `failed`.
   */
  report(agentId: string, status: AgentStatus): void {
    const entry = this.#byId.get(agentId);
    if (entry) this.#set(entry, status);
  }

  /** Stop every agent; one that fails to close does not keep the others from closing. */
  async close(): Promise<void> {
    await Promise.all(
      this.#agents.map(async (a) => {
        try {
          await a.backend.close();
        } catch (err) {
          this.deps.log.warn({ err, agent: a.id }, "agent backend did not close cleanly");
        }
      }),
    );
  }

  /** First use: idle → starting → ready (or failed; the next use tries again). */
  #activate(entry: Entry): Promise<void> {
    if (entry.activation) return entry.activation;
    if (entry.status === "ready") return Promise.resolve();
    const activation = (async () => {
      this.#set(entry, "starting");
      try {
        await entry.backend.ensureReady?.();
        this.#set(entry, "ready");
      } catch (err) {
        this.deps.log.warn({ err, agent: entry.id }, "agent failed to start");
        this.#set(entry, "failed");
      } finally {
        entry.activation = undefined;
      }
    })();
    entry.activation = activation;
    return activation;
  }

  #set(entry: Entry, status: AgentStatus): void {
    if (entry.status === status) return;
    entry.status = status;
    for (const listener of this.#listeners) listener(view(entry));
  }
}

function view(entry: Entry): AgentView {
  return { agent_id: entry.id, name: entry.name, status: entry.status };
}
