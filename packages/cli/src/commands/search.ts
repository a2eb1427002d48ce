import { LIMITS } from "@pheby/protocol";
import { type Command, EXIT, intFlag } from "../command.js";
import { UsageError } from "../exit.js";
import { requireInbox } from "../inbox.js";
import { writeJson, writeLine } from "../io.js";

export const search: Command = {
  name: "search",
  usage: "<words…> [--limit N]",
  summary:
    'Search every conversation\'s messages (archived ones too), newest first. SQLite FTS5 syntax works ("exact phrase", depl*); text it cannot parse is searched as plain words.',
  details: [
    `  --limit N  most results, 1..${LIMITS.searchResults} (server default ${LIMITS.searchResultsDefault})`,
  ],
  options: { limit: { type: "string" } },
  examples: ["pheby search deploy staging", 'pheby search "release notes" --limit 5 --json'],
  async run({ positionals, flags, io, connect }) {
    const query = positionals.join(" ").trim();
    if (!query) throw new UsageError("missing <words>");
    const limit = intFlag(flags, "limit");
    const client = await connect();
    requireInbox(client, "pheby search");
    const results = await client.search(query, limit === undefined ? {} : { limit });
    if (flags.json === true) for (const r of results) writeJson(io, r);
    else if (results.length === 0) writeLine(io, "No results.");
    else
      for (const r of results)
        writeLine(
          io,
          `${r.conversation_id}  ${r.message_id.padEnd(6)}  ${r.ts ?? "-".padEnd(24)}  ${r.snippet}`,
        );
    return EXIT.ok;
  },
};
