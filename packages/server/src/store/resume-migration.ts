/**
 * Schema of the `resume` and `queue` extensions: migration step v6
 * of `MIGRATIONS` (store/migrations.ts); a shipped step never moves or changes.
 *
 * - `replay_counters` / `replay_events`: the per-conversation resume log
 *   ({@link ResumeLog}; the tables keep their first name). The counter row has no foreign key and outlives its
 *   conversation's deletion, so a `seq` is never issued twice for one ID.
 * - `sent_requests`: remembered outcomes of `chat.send` / `conversation.create`
 *   by `client_message_id` ({@link SentRequests}), kept 24 hours.
 * - `queued_runs`: follow-ups waiting for the active run ({@link QueueStore}).
 * - `messages.client_message_id`: a user message shows the ID it was sent with.
 */
export const RESUME_MIGRATION = `
  CREATE TABLE replay_counters (
    conversation_id TEXT PRIMARY KEY,
    last_seq        INTEGER NOT NULL,            -- the highest seq ever issued; only grows
    evicted_through INTEGER NOT NULL DEFAULT 0,  -- events with seq <= this may be gone
    events          INTEGER NOT NULL DEFAULT 0,  -- rows held in replay_events
    bytes           INTEGER NOT NULL DEFAULT 0   -- UTF-8 bytes of their event JSON
  );

  CREATE TABLE replay_events (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    draft_of        TEXT,     -- message_id when the row is a message.delta (updated in place)
    feature         TEXT,     -- the extension a peer needs to be sent it; NULL: every resume peer
    event           TEXT NOT NULL,  -- the typed event's JSON, without request_id and seq
    fields          TEXT,     -- JSON of other extensions' fields of the event, by extension
    bytes           INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX replay_events_seq ON replay_events (conversation_id, seq);

  CREATE TABLE sent_requests (
    kind              TEXT NOT NULL,  -- 'chat.send' | 'conversation.create'
    scope             TEXT NOT NULL,  -- the conversation of a chat.send; '' for conversation.create
    client_message_id TEXT NOT NULL,
    outcome           TEXT NOT NULL,  -- JSON of the reply, or of the permanent error
    at                INTEGER NOT NULL,
    PRIMARY KEY (kind, scope, client_message_id)
  );
  CREATE INDEX sent_requests_age ON sent_requests (at);

  CREATE TABLE queued_runs (
    id                INTEGER PRIMARY KEY,  -- the queue's order
    run_id            TEXT NOT NULL UNIQUE,
    conversation_id   TEXT NOT NULL REFERENCES conversations (id),
    text              TEXT NOT NULL,
    client_message_id TEXT,
    attachment_ids    TEXT NOT NULL,        -- JSON array, claimed when the run starts
    queued_at         INTEGER NOT NULL
  );
  CREATE INDEX queued_runs_conversation ON queued_runs (conversation_id, id);

  ALTER TABLE messages ADD COLUMN client_message_id TEXT;
`;
