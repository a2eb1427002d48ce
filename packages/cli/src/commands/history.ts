import type { HistoryMessage } from "@pheby/protocol";
import { type Command, EXIT, intFlag, required } from "../command.js";
import { type Io, writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

function printMessage(io: Io, m: HistoryMessage): void {
  writeLine(io, `[${m.ts ?? "no time"}] ${m.role}: ${m.text}`);
}

export const history: Command = {
  name: "history",
  usage: "<conversation> [--limit N] [--before MESSAGE_ID] [--all]",
  summary:
    "Page through a conversation's history, newest page first. Without --all it prints one page and the cursor for the previous one.",
  details: [
    "  --limit N            page size, 1..500 (server default 200)",
    "  --before MESSAGE_ID  the page just before this message (exclusive cursor)",
    "  --all                follow the cursor back to the beginning and print everything, oldest first",
  ],
  options: { limit: { type: "string" }, before: { type: "string" }, all: { type: "boolean" } },
  examples: [
    "pheby history 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 --limit 50",
    'pheby history "Trip planning" --all --json',
  ],
  async run({ positionals, flags, io, connect }) {
    const client = await connect();
    const conversation_id = await resolveConversation(client, required(positionals, 0, "<conversation>"));
    const limit = intFlag(flags, "limit");
    let before = flags.before as string | undefined;
    const pages: HistoryMessage[][] = [];
    let hasMore = false;
    do {
      const page = await client.request({
        type: "conversation.open",
        conversation_id,
        ...(limit === undefined ? {} : { limit }),
        ...(before === undefined ? {} : { before_message_id: before }),
      });
      pages.unshift(page.messages);
      hasMore = page.has_more && page.messages.length > 0;
      before = page.messages[0]?.message_id;
    } while (flags.all === true && hasMore);
    const messages = pages.flat();
    const cursor = hasMore ? before : undefined;
    if (flags.json === true) {
      writeJson(io, {
        conversation_id,
        messages,
        has_more: hasMore,
        ...(cursor ? { before_message_id: cursor } : {}),
      });
    } else {
      for (const m of messages) printMessage(io, m);
      if (cursor) writeLine(io, `-- earlier messages: pheby history ${conversation_id} --before ${cursor}`);
    }
    return EXIT.ok;
  },
};
