import { isGit } from "../agents/placement.js";
import type { HandlerTable } from "./context.js";

/**
 * agents.list / workspaces.list (the `workspaces` extension): ids, names, statuses and whether a
 * workspace is in git; never a path. Both answer the requester only.
 */
export const workspaceHandlers: HandlerTable = {
  "agents.list": (ctx) => ({
    rule: "requester",
    reply: { type: "agents.snapshot", agents: ctx.agents.views() },
  }),

  "workspaces.list": (ctx) => ({
    rule: "requester",
    reply: {
      type: "workspaces.snapshot",
      workspaces: ctx.agents.workspaces().map((w) => ({
        workspace_id: w.id,
        name: w.name,
        agents: [...w.agents],
        git: isGit(w.path),
      })),
    },
  }),
};
