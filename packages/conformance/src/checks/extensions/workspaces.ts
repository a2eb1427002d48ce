// Agents and workspaces: agents.list, workspaces.list, conversation.create's placement and its refusals,
// list entries' agent_id/workspace_id/branch and filters. Passes with one agent and a workspace that is
// not a git repository.
import { AGENT_STATUSES, FEATURE_WORKSPACES, type ServerMessageOf } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: agents and workspaces (`workspaces`)";

type Entry = ServerMessageOf<"conversation.snapshot">["conversations"][number];

/** An id no server configures: ids are `[a-z0-9-]`, and this one is long and odd. */
const UNKNOWN_ID = "conformance-no-such-id-0";

async function entries(probe: Probe, filter: Record<string, unknown> = {}): Promise<Entry[]> {
  return (await probe.expectReply({ type: "conversation.list", ...filter }, "conversation.snapshot"))
    .conversations;
}

/** `bad_request` whose message starts with the field it names. */
async function refused(probe: Probe, frame: Record<string, unknown>, field: string, what: string) {
  const request_id = probe.requestId();
  probe.send({ ...frame, request_id });
  const reply = await probe.reply(request_id, what);
  if (reply.type !== "error" || reply.error.code !== "bad_request")
    throw new CheckFailure(`${what}: expected bad_request, got ${reply.type}`, reply);
  expect(reply.error.message.includes(field), `${what}: the bad_request does not name ${field}`, reply);
}

export const workspacesChecks: Check[] = [
  {
    id: "extensions.workspaces",
    section: SECTION,
    title:
      "workspaces: agents.list lists the agents (the default first) with a known status, workspaces.list the workspaces with known agents and git; conversation.create without ids lands on the default agent in the first workspace allowing it, with a workspace_id on that workspace's first agent; an unknown agent_id or workspace_id, and worktree: true in a workspace outside git, are bad_request naming the field and create nothing; entries carry agent_id, workspace_id and branch, and conversation.list filters by them; a v1 connection gets unknown_type for the requests and v1 entries",
    async run(ctx) {
      const w = await ctx.connectWith("workspaces", [FEATURE_WORKSPACES]);
      const v1 = await ctx.connect("v1");

      const { agents } = await w.expectReply({ type: "agents.list" }, "agents.snapshot");
      expect(agents.length >= 1, "agents.list lists no agent", agents);
      expect(
        agents.every((a) => AGENT_STATUSES.includes(a.status)),
        "an agent's status is not idle, starting, ready or failed",
        agents,
      );
      const { workspaces } = await w.expectReply({ type: "workspaces.list" }, "workspaces.snapshot");
      expect(workspaces.length >= 1, "workspaces.list lists no workspace", workspaces);
      const agentIds = new Set(agents.map((a) => a.agent_id));
      expect(
        workspaces.every((ws) => ws.agents.length >= 1 && ws.agents.every((id) => agentIds.has(id))),
        "a workspace lists no agent or an agent agents.list does not know",
        workspaces,
      );
      const defaultAgent = agents[0]!.agent_id;
      const home = workspaces.find((ws) => ws.agents.includes(defaultAgent));
      if (!home) throw new CheckFailure("no workspace allows the default agent", workspaces);

      const created = await w.expectReply(
        { type: "conversation.create", name: "conformance workspaces" },
        "conversation.created",
      );
      expect(
        created.agent_id === defaultAgent && created.workspace_id === home.workspace_id,
        "without ids the conversation is not the default agent's in the first workspace allowing it",
        created,
      );
      expect(created.branch === null, "a conversation without a worktree has a branch", created);
      const last = workspaces[workspaces.length - 1]!;
      const inLast = await w.expectReply(
        { type: "conversation.create", name: "conformance workspace", workspace_id: last.workspace_id },
        "conversation.created",
      );
      expect(
        inLast.agent_id === last.agents[0] && inLast.workspace_id === last.workspace_id,
        "with only workspace_id the conversation is not that workspace's first agent's",
        inLast,
      );

      const before = (await entries(w)).length;
      await refused(
        w,
        { type: "conversation.create", agent_id: UNKNOWN_ID },
        "agent_id",
        "an unknown agent_id",
      );
      await refused(
        w,
        { type: "conversation.create", workspace_id: UNKNOWN_ID },
        "workspace_id",
        "an unknown workspace_id",
      );
      const plain = workspaces.find((ws) => !ws.git);
      if (plain)
        await refused(
          w,
          { type: "conversation.create", workspace_id: plain.workspace_id, worktree: true },
          "worktree",
          "worktree: true outside git",
        );
      const listed = await entries(w);
      expect(listed.length === before, "a refused conversation.create created a conversation", listed);
      const entry = listed.find((e) => e.conversation_id === created.conversation_id);
      expect(
        entry?.agent_id === defaultAgent && entry.workspace_id === home.workspace_id && entry.branch === null,
        "the list entry does not carry its agent_id, workspace_id and branch",
        entry,
      );
      const filtered = await entries(w, { workspace_id: last.workspace_id });
      expect(
        filtered.some((e) => e.conversation_id === inLast.conversation_id) &&
          filtered.every((e) => e.workspace_id === last.workspace_id),
        "conversation.list's workspace_id filter lists other workspaces' conversations",
        filtered,
      );

      await v1.expectError({ type: "agents.list" }, "unknown_type", "agents.list without workspaces");
      await v1.expectError({ type: "workspaces.list" }, "unknown_type", "workspaces.list without workspaces");
      const v1Entry = (await entries(v1)).find((e) => e.conversation_id === created.conversation_id);
      expect(
        v1Entry !== undefined &&
          !("agent_id" in v1Entry) &&
          !("workspace_id" in v1Entry) &&
          !("branch" in v1Entry),
        "a v1 list entry carries workspaces fields",
        v1Entry,
      );
      for (const id of [created.conversation_id, inLast.conversation_id])
        await w.expectReply({ type: "conversation.delete", conversation_id: id }, "conversation.deleted");
    },
  },
];
