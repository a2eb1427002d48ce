import { type Command, EXIT, required } from "../command.js";
import { UsageError } from "../exit.js";
import { conversationLine, requireInbox, shownStatus, statusFlag } from "../inbox.js";
import { writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

export const conversations: Command = {
  name: "conversations",
  usage:
    "[list [--status S] [--archived] | create [name] | rename <conversation> <name> | delete <conversation> | archive <conversation> | unarchive <conversation>]",
  summary:
    "List, create, rename, delete and archive conversations. <conversation> is an ID or an exact name.",
  details: [
    "  With the server's inbox extension the list shows each conversation's status and unread count,",
    "  and leaves archived conversations out:",
    "  --status S   only conversations whose status is S: waiting (needs you), running, failed or idle",
    "  --archived   the archived conversations instead",
  ],
  options: { status: { type: "string" }, archived: { type: "boolean" } },
  examples: [
    "pheby conversations",
    "pheby conversations --status waiting",
    'pheby conversations create "Trip planning"',
    'pheby conversations rename "Trip planning" "Trip to Lisbon"',
    "pheby conversations delete 9f1c0e7a2b3d4c5e6f708192a3b4c5d6",
    'pheby conversations archive "Trip planning"',
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "list", ...rest] = positionals;
    const json = flags.json === true;
    const client = await connect();
    switch (action) {
      case "list": {
        const status = statusFlag(flags.status);
        const archived = flags.archived === true;
        if (status !== undefined) requireInbox(client, "--status");
        if (archived) requireInbox(client, "--archived");
        const conversations = (await client.listConversations({ archived })).filter(
          (c) => status === undefined || shownStatus(c) === status,
        );
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
        const created = await client.request({ type: "conversation.create", ...(name ? { name } : {}) });
        if (json) writeJson(io, { conversation_id: created.conversation_id, name: created.name });
        else writeLine(io, `${created.conversation_id}  ${created.name}`);
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
