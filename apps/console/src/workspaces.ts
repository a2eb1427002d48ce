// The `workspaces` extension in the console: the server's agents (with their status, live from
// `agents.changed`) and workspaces, the new-conversation form that picks an agent, a workspace and a
// git worktree, and the "agent · workspace · branch" line of a conversation. Without the extension
// (a server that did not enable it) none of this shows and "New conversation" creates at once.
// Workspaces are known by id and name only: no server path ever reaches the console.
import type { PhebyClient } from "@pheby/client";
import { FEATURE_WORKSPACES, type ServerMessageOf } from "@pheby/protocol";
import { h, replace } from "./dom.js";

/** An agent as `agents.snapshot` and `agents.changed` carry it: its id, name and status. */
export type Agent = ServerMessageOf<"agents.changed">["agent"];

/** A workspace as `workspaces.snapshot` carries it: which agents may work in it, whether it is a git repo. */
export type Workspace = ServerMessageOf<"workspaces.snapshot">["workspaces"][number];

/** Where a conversation works: the `workspaces` fields of a conversation entry. */
export interface Placement {
  agent_id: string;
  workspace_id: string;
  /** The conversation's own worktree branch, or null. */
  branch: string | null;
}

/** What `conversation.create` gains: the agent, the workspace and whether to work in a worktree. */
export interface NewConversation {
  agent_id: string;
  workspace_id: string;
  worktree: boolean;
}

/** The `workspaces` fields of an entry, or undefined when it carries none (a v1 connection). */
export function placementOf(m: {
  agent_id?: string | undefined;
  workspace_id?: string | undefined;
  branch?: string | null | undefined;
}): Placement | undefined {
  if (m.agent_id === undefined || m.workspace_id === undefined) return undefined;
  return { agent_id: m.agent_id, workspace_id: m.workspace_id, branch: m.branch ?? null };
}

const STATUS_LABELS: Record<string, string> = {
  idle: "not started",
  starting: "starting…",
  ready: "ready",
  failed: "failed",
};

/** An agent's status as shown; one a newer server added reads "unknown". */
export function statusLabel(status: string): string {
  return STATUS_LABELS[status] ?? "unknown";
}

/**
 * The server's agents and workspaces, listed on connect (and after every reconnect) and kept up to
 * date by `agents.changed`. Empty when the server does not enable `workspaces`.
 */
export class Catalogue {
  readonly agents = new Map<string, Agent>();
  readonly workspaces = new Map<string, Workspace>();
  private readonly listeners = new Set<() => void>();
  /** The latest listing, settled or not. */
  private loading: Promise<void> = Promise.resolve();

  constructor(private readonly client: PhebyClient) {}

  /** Whether this connection has the extension. */
  get enabled(): boolean {
    return this.client.features.includes(FEATURE_WORKSPACES);
  }

  /** List both again (on connect and after a reconnect, which may have missed `agents.changed`). */
  load(): Promise<void> {
    this.loading = (async () => {
      const [agents, workspaces] = this.enabled
        ? await Promise.all([this.client.listAgents(), this.client.listWorkspaces()])
        : [[], []];
      this.agents.clear();
      this.workspaces.clear();
      for (const a of agents) this.agents.set(a.agent_id, a);
      for (const w of workspaces) this.workspaces.set(w.workspace_id, w);
      this.emit();
    })();
    return this.loading;
  }

  /** Wait until the latest listing is done (failed or not), so a choice is made from the real list. */
  async settled(): Promise<void> {
    await this.loading.catch(() => undefined);
  }

  /** An `agents.changed`: an agent started, became ready, failed or stopped. */
  changed(agent: Agent): void {
    this.agents.set(agent.agent_id, agent);
    this.emit();
  }

  /** Call `listener` whenever the agents or workspaces change. */
  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  agentName(id: string): string {
    return this.agents.get(id)?.name ?? id;
  }

  workspaceName(id: string): string {
    return this.workspaces.get(id)?.name ?? id;
  }

  /** The workspaces an agent may work in, in the server's order. */
  workspacesOf(agentId: string): Workspace[] {
    return [...this.workspaces.values()].filter((w) => w.agents.includes(agentId));
  }

  /** Whether a new conversation has anything to choose: several agents or workspaces, or a worktree. */
  get hasChoice(): boolean {
    return (
      this.agents.size > 1 || this.workspaces.size > 1 || [...this.workspaces.values()].some((w) => w.git)
    );
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}

/**
 * A conversation's place in one short line: agent · workspace · ⎇ branch (each name as text). Null on
 * a server with one agent in one workspace, where every conversation is in the same place, unless the
 * conversation has a worktree branch of its own.
 */
export function placementView(placement: Placement, catalogue: Catalogue): HTMLElement | null {
  if (catalogue.agents.size <= 1 && catalogue.workspaces.size <= 1 && !placement.branch) return null;
  const agent = catalogue.agentName(placement.agent_id);
  const workspace = catalogue.workspaceName(placement.workspace_id);
  return h(
    "span",
    {
      class: "placement",
      // The whole line, for when a narrow row cuts it short.
      title: [agent, workspace, placement.branch ? `⎇ ${placement.branch}` : ""].filter(Boolean).join(" · "),
      "data-testid": "placement",
      "data-agent-id": placement.agent_id,
      "data-workspace-id": placement.workspace_id,
    },
    h("span", { class: "agent" }, agent),
    " · ",
    h("span", { class: "workspace" }, workspace),
    placement.branch
      ? h("span", { class: "branch", title: "Git worktree branch" }, ` · ⎇ ${placement.branch}`)
      : null,
  );
}

/**
 * The new-conversation form, folded under "New conversation": the agent (each with its status), the
 * workspaces that agent may work in, and "Git worktree" when the workspace is a git repository. Its
 * choices default to what the server would pick (the first agent, its first workspace).
 */
export class NewConversationForm {
  readonly el = h("form", {
    class: "new-conversation",
    "data-testid": "new-conversation-form",
    "aria-label": "New conversation",
    hidden: true,
  });
  private readonly agent = h("select", { "aria-label": "Agent", "data-testid": "new-agent" });
  private readonly workspace = h("select", { "aria-label": "Workspace", "data-testid": "new-workspace" });
  private readonly worktree = h("input", { type: "checkbox", "data-testid": "new-worktree" });
  private readonly worktreeLabel = h(
    "label",
    { class: "worktree", title: "Work on a new branch in a git worktree of its own" },
    this.worktree,
    " Worktree",
  );
  private readonly start = h(
    "button",
    { type: "submit", class: "primary", "data-testid": "new-start" },
    "Start",
  );

  constructor(
    private readonly catalogue: Catalogue,
    create: (choice: NewConversation) => Promise<void>,
  ) {
    const cancel = h("button", { type: "button", "data-testid": "new-cancel" }, "Cancel");
    cancel.addEventListener("click", () => this.close());
    this.el.append(
      h("label", {}, h("span", {}, "Agent"), this.agent),
      h("label", {}, h("span", {}, "Workspace"), this.workspace),
      h("div", { class: "row" }, this.worktreeLabel, cancel, this.start),
    );
    this.agent.addEventListener("change", () => this.render());
    this.workspace.addEventListener("change", () => this.render());
    this.el.addEventListener("submit", (event) => {
      event.preventDefault();
      const choice = {
        agent_id: this.agent.value,
        workspace_id: this.workspace.value,
        worktree: !this.worktreeLabel.hidden && this.worktree.checked,
      };
      this.start.disabled = true;
      void create(choice).finally(() => {
        this.start.disabled = false;
        this.close();
      });
    });
    catalogue.onChange(() => this.render());
  }

  /** Whether the form is unfolded. */
  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** Unfold it, with the last agent and workspace chosen still chosen (while they exist). */
  open(): void {
    this.worktree.checked = false;
    this.el.hidden = false;
    this.render();
    this.agent.focus();
  }

  close(): void {
    this.el.hidden = true;
  }

  /** Draw the choices again, keeping what is chosen while it is still allowed. */
  private render(): void {
    const agents = [...this.catalogue.agents.values()];
    const agentId = agents.some((a) => a.agent_id === this.agent.value)
      ? this.agent.value
      : (agents[0]?.agent_id ?? "");
    replace(
      this.agent,
      ...agents.map((a) =>
        h(
          "option",
          { value: a.agent_id, "data-status": a.status, selected: a.agent_id === agentId },
          `${a.name} · ${statusLabel(a.status)}`,
        ),
      ),
    );
    this.agent.value = agentId;
    this.agent.dataset.status = this.catalogue.agents.get(agentId)?.status ?? "";
    const workspaces = this.catalogue.workspacesOf(agentId);
    const workspaceId = workspaces.some((w) => w.workspace_id === this.workspace.value)
      ? this.workspace.value
      : (workspaces[0]?.workspace_id ?? "");
    replace(
      this.workspace,
      ...workspaces.map((w) =>
        h("option", { value: w.workspace_id, selected: w.workspace_id === workspaceId }, w.name),
      ),
    );
    this.workspace.value = workspaceId;
    this.worktreeLabel.hidden = this.catalogue.workspaces.get(workspaceId)?.git !== true;
    this.start.disabled = !agentId || !workspaceId;
  }
}
