/**
 * The agents and workspaces a server runs with: the checks across options that Zod's per-field
 * rules cannot make (ids unique, a workspace's agents known, `agent` and `agents` exclusive), and
 * the single-agent defaults (one agent `default`, one workspace `default`).
 */
import { LIMITS } from "@pheby/protocol";
import type { z } from "zod/v3";
import type { AgentBackend } from "../agent/port.js";

/** Agent and workspace ids (the `workspaces` extension's id rule). */
export const ENTITY_ID = new RegExp(`^[a-z0-9-]{1,${LIMITS.workspaceIdChars}}$`);
/** At most this many agents and workspaces. */
export const MAX_AGENTS = LIMITS.agents;
export const MAX_WORKSPACES = LIMITS.workspaces;
/** Names of agents and workspaces, in characters. */
export const MAX_NAME_CHARS = LIMITS.workspaceNameChars;
/** The id of the agent and of the workspace of a single-agent server, and of rows older than both. */
export const DEFAULT_ID = "default";

/** One agent as the server runs it. */
export interface AgentSpec {
  id: string;
  name: string;
  backend: AgentBackend;
}

/** One workspace as the server runs it: `agents` resolved (never empty, in the agents' order). */
export interface WorkspaceSpec {
  id: string;
  name: string;
  /** Absolute; never sent to a client. */
  path: string;
  agents: string[];
}

/** What {@link checkPlacementOptions} and {@link resolvePlacement} read of the options. */
interface PlacementOptions {
  agent?: AgentBackend | undefined;
  agents?: readonly { id: string; name: string; backend: AgentBackend }[] | undefined;
  workspaces?:
    | readonly { id: string; name: string; path: string; agents?: readonly string[] | undefined }[]
    | undefined;
  workdir?: string | undefined;
}

/** Zod `superRefine` of the server options: each problem names its option path. */
export function checkPlacementOptions(o: PlacementOptions, ctx: z.RefinementCtx): void {
  if (o.agent !== undefined && o.agents !== undefined)
    ctx.addIssue({ code: "custom", path: ["agents"], message: "must not be given together with agent" });
  duplicates(o.agents ?? [], "agents", ctx);
  duplicates(o.workspaces ?? [], "workspaces", ctx);
  const known = new Set((o.agents ?? []).map((a) => a.id));
  if (known.size === 0) known.add(DEFAULT_ID);
  (o.workspaces ?? []).forEach((w, i) => {
    (w.agents ?? []).forEach((id, j) => {
      if (!known.has(id))
        ctx.addIssue({
          code: "custom",
          path: ["workspaces", i, "agents", j],
          message: `names an unknown agent "${id}"`,
        });
    });
    if (w.agents && new Set(w.agents).size !== w.agents.length)
      ctx.addIssue({ code: "custom", path: ["workspaces", i, "agents"], message: "lists an agent twice" });
    if (w.agents?.length === 0)
      ctx.addIssue({
        code: "custom",
        path: ["workspaces", i, "agents"],
        message: "must list at least one agent",
      });
  });
}

function duplicates(list: readonly { id: string }[], key: string, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  list.forEach((entry, i) => {
    if (seen.has(entry.id))
      ctx.addIssue({ code: "custom", path: [key, i, "id"], message: `duplicates the id "${entry.id}"` });
    seen.add(entry.id);
  });
}

/**
 * The agents and workspaces of checked options. Without `agents`: one agent `default` (`agent`,
 * else `fallback()`); without `workspaces`: one workspace `default` at `workdir`, else the default
 * agent backend's own directory, else the server's working directory.
 */
export function resolvePlacement(
  o: PlacementOptions,
  fallback: () => AgentBackend,
): { agents: AgentSpec[]; workspaces: WorkspaceSpec[] } {
  const agents: AgentSpec[] = o.agents
    ? o.agents.map((a) => ({ id: a.id, name: a.name, backend: a.backend }))
    : [{ id: DEFAULT_ID, name: "Default", backend: o.agent ?? fallback() }];
  const all = agents.map((a) => a.id);
  const workspaces: WorkspaceSpec[] = o.workspaces
    ? o.workspaces.map((w) => ({ id: w.id, name: w.name, path: w.path, agents: [...(w.agents ?? all)] }))
    : [
        {
          id: DEFAULT_ID,
          name: "Default",
          path: o.workdir ?? agents[0]!.backend.cwd ?? process.cwd(),
          agents: all,
        },
      ];
  return { agents, workspaces };
}
