import { FEATURE_WORKSPACES } from "@pheby/protocol";
import { type Command, EXIT, required } from "../command.js";
import { UsageError } from "../exit.js";
import { requireFeature } from "../features.js";
import { conversationLine, requireInbox, shownStatus, statusFlag } from "../inbox.js";
import { writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";
import { placeOf } from "../workspaces.js";

/** A string flag's value, or undefined (parseArgs gives strings for `type: "string"` options). */
const stringFlag = (raw: unknown): string | undefined => (typeof raw === "string" ? raw : undefined);

export const conversations: Command = {
  name: "conversations",
  usage:
    "[list [--status S] [--archived] [--agent ID] [--workspace ID] | create [name] [--agent ID] [--workspace ID] [--worktree] | rename <conversation> <name> | delete <conversation> | archive <conversation> | unarchive <conversation>]",
  summary:
    "List, create, rename, delete and archive conversations. <conversation> is an ID or an exact name.",
  details: [
    "  With the server's inbox extension the list shows each conversation's status and unread count,",
    "  and leaves archived conversations out:",
    "  --status S   only conversations whose status is S: waiting (needs you), running, failed or idle",
    "  --archived   the archived conversations instead",
    "  With the server's workspaces extension each row also shows where the conversation runs:",
    "  agent@workspace and, for a worktree conversation, [its branch].",
    "  --agent ID       list: only this agent's; create: run it with this agent (see pheby agents)",
    "  --workspace ID   list: only this workspace's; create: run it in this workspace (see pheby workspaces)",
    "  --worktree       create: in a new git worktree of the workspace, on a branch pheby/<id>",
  ],
  options: {
    status: { type: "string" },
    archived: { type: "boolean" },
    agent: { type: "string" },
    workspace: { type: "string" },
    worktree: { type: "boolean" },
  },
  examples: [
    "pheby conversations",
    "pheby conversations --status waiting",
    'pheby conversations create "Trip planning"',
    'pheby conversations create "Fix the footer" --agent claude --workspace site --worktree',
    "pheby conversations --workspace site",
    'pheby conversations rename "Trip planning" "Trip to Lisbon"',
    "pheby conversations delete 9f1c0e7a2b3d4c5e6f708192a3b4c5d6",
    'pheby conversations archive "Trip planning"',
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "list", ...rest] = positionals;
    const json = flags.json === true;
    const agentId = stringFlag(flags.agent);
    const workspaceId = stringFlag(flags.workspace);
    const worktree = flags.worktree === true;
    if (worktree && action !== "create") throw new UsageError("--worktree goes with create");
    const client = await connect();
    // Without the extension the server would ignore these: a list of everything, a conversation in
    // the default place.
    if (agentId !== undefined) requireFeature(client, FEATURE_WORKSPACES, "--agent");
    if (workspaceId !== undefined) requireFeature(client, FEATURE_WORKSPACES, "--workspace");
    if (worktree) requireFeature(client, FEATURE_WORKSPACES, "--worktree");
    switch (action) {
      case "list": {
        const status = statusFlag(flags.status);
        const archived = flags.archived === true;
        if (status !== undefined) requireInbox(client, "--status");
        if (archived) requireInbox(client, "--archived");
        const conversations = (
          await client.listConversations({
            archived,
            ...(agentId === undefined ? {} : { agentId }),
            ...(workspaceId === undefined ? {} : { workspaceId }),
          })
        ).filter((c) => status === undefined || shownStatus(c) === status);
        if (json) for (const c of conversations) writeJson(io, c);
        else if (conversations.length === 0) writeLine(io, "No conversations.");
        else for (const c of conversations) writeLine(io, conversationLine(c));
        return EXIT.ok;
      }
      case "archive":
      case "unarchive": {
        requireInbox(client, `pheby conversations ${action}`);
        const conversation_id = await resolveConversation(client, required(rest, 0, "<conversation>"));
        const state = await client.archive(conversation_id, action === "archive");
        if (json) writeJson(io, { conversation_id, archived: state.archived });
        else writeLine(io, `${state.archived ? "archived" : "unarchived"} ${conversation_id}`);
        return EXIT.ok;
      }
      case "create": {
        const name = rest.join(" ").trim();
        const created = await client.createConversation({
          ...(name ? { name } : {}),
          ...(agentId === undefined ? {} : { agentId }),
          ...(workspaceId === undefined ? {} : { workspaceId }),
          ...(worktree ? { worktree } : {}),
        });
        const { conversation_id, agent_id, workspace_id, branch } = created;
        if (json)
          writeJson(io, {
            conversation_id,
            name: created.name,
            ...(agent_id === undefined ? {} : { agent_id, workspace_id, branch }),
          });
        else {
          const place = placeOf(created);
          writeLine(io, `${conversation_id}  ${place ? `${place}  ` : ""}${created.name}`);
        }
        return EXIT.ok;
      }
      case "rename": {
        const conversation_id = await resolveConversation(client, required(rest, 0, "<conversation>"));
        const name = rest.slice(1).join(" ").trim();
        if (!name) throw new UsageError("missing <name>");
        const renamed = await client.request({ type: "conversation.rename", conversation_id, name });
        if (json) writeJson(io, { conversation_id, name: renamed.name });
        else writeLine(io, `${conversation_id}  ${renamed.name}`);
        return EXIT.ok;
      }
      case "delete": {
        const conversation_id = await resolveConversation(client, required(rest, 0, "<conversation>"));
        await client.request({ type: "conversation.delete", conversation_id });
        if (json) writeJson(io, { conversation_id, deleted: true });
        else writeLine(io, `deleted ${conversation_id}`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown action "${action}" (list, create, rename, delete, archive, unarchive)`);
    }
  },
};
