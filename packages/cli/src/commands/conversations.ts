import { type Command, EXIT, required } from "../command.js";
import { UsageError } from "../exit.js";
import { writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

export const conversations: Command = {
  name: "conversations",
  usage: "[list | create [name] | rename <conversation> <name> | delete <conversation>]",
  summary: "List, create, rename and delete conversations. <conversation> is an ID or an exact name.",
  examples: [
    "pheby conversations",
    'pheby conversations create "Trip planning"',
    'pheby conversations rename "Trip planning" "Trip to Lisbon"',
    "pheby conversations delete 9f1c0e7a2b3d4c5e6f708192a3b4c5d6",
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "list", ...rest] = positionals;
    const json = flags.json === true;
    const client = await connect();
    switch (action) {
      case "list": {
        const { conversations } = await client.request({ type: "conversation.list" });
        if (json) for (const c of conversations) writeJson(io, c);
        else if (conversations.length === 0) writeLine(io, "No conversations.");
        else
          for (const c of conversations)
            writeLine(io, `${c.conversation_id}  ${c.last_active ?? "-".padEnd(24)}  ${c.name}`);
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
        throw new UsageError(`unknown action "${action}" (list, create, rename, delete)`);
    }
  },
};
