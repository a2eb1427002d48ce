import { FEATURE_WORKSPACES } from "@pheby/protocol";
import { type Command, EXIT } from "../command.js";
import { requireFeature } from "../features.js";
import { writeJson, writeLine } from "../io.js";
import { agentLine, workspaceLine } from "../workspaces.js";

export const agents: Command = {
  name: "agents",
  usage: "",
  summary:
    "List the agents the server runs (workspaces extension): ID, status (idle until first used, starting, ready, failed) and name; * marks the default agent.",
  examples: ["pheby agents", "pheby agents --json"],
  async run({ flags, io, connect }) {
    const client = await connect();
    requireFeature(client, FEATURE_WORKSPACES, "pheby agents");
    const list = await client.listAgents();
    if (flags.json === true) for (const a of list) writeJson(io, a);
    else if (list.length === 0) writeLine(io, "No agents.");
    else for (const [i, a] of list.entries()) writeLine(io, agentLine(a, i === 0));
    return EXIT.ok;
  },
};

export const workspaces: Command = {
  name: "workspaces",
  usage: "",
  summary:
    "List the workspaces the server offers (workspaces extension): ID, git (a worktree is possible) or -, the agents allowed there (its default first) and name.",
  examples: ["pheby workspaces", "pheby workspaces --json"],
  async run({ flags, io, connect }) {
    const client = await connect();
    requireFeature(client, FEATURE_WORKSPACES, "pheby workspaces");
    const list = await client.listWorkspaces();
    if (flags.json === true) for (const w of list) writeJson(io, w);
    else if (list.length === 0) writeLine(io, "No workspaces.");
    else for (const w of list) writeLine(io, workspaceLine(w));
    return EXIT.ok;
  },
};
