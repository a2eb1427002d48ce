import { formatTool, useColor } from "../activity.js";
import { type Command, EXIT, required } from "../command.js";
import { writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

export const tool: Command = {
  name: "tool",
  usage: "<conversation> <tool_call_id>",
  summary:
    "Show one tool call of a conversation in full (tool.get): its status, title and locations, its diffs and its output, also for an older run.",
  details: [
    "The tool_call_id is in `pheby chat --json` and `pheby tail` output (tool.event), and in conversation.history.",
    "Needs a server with the activity extension. Diffs are coloured on a terminal (not with NO_COLOR).",
  ],
  examples: [
    'pheby tool "Refactor" call_7f3a',
    "pheby tool 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 call_7f3a --json",
  ],
  async run({ positionals, flags, io, connect }) {
    const target = required(positionals, 0, "<conversation>");
    const toolCallId = required(positionals, 1, "<tool_call_id>");
    const client = await connect();
    const conversationId = await resolveConversation(client, target);
    const event = await client.getTool(conversationId, toolCallId);
    if (flags.json === true) writeJson(io, event);
    else for (const line of formatTool(event, useColor(io))) writeLine(io, line);
    return EXIT.ok;
  },
};
