/**
 * Migration step of the `activity` extension, appended to `MIGRATIONS` in `migrations.ts`: each
 * tool call keeps its detail (kind, title, locations, content, as clients may see it: placed,
 * scrubbed, redacted, bounded) so `tool.get` and `conversation.history` can show older runs' calls.
 * The index finds one call of a conversation by its ID, whichever run it was in.
 */
export const ACTIVITY_TOOLS_MIGRATION = `
  ALTER TABLE tool_calls ADD COLUMN detail_json TEXT;
  CREATE INDEX tool_calls_conversation ON tool_calls (conversation_id, tool_call_id);
`;
