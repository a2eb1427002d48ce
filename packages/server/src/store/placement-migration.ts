/**
 * The `workspaces` extension's schema step: where each conversation lives, and global settings per
 * agent. Rows from before it keep null placement until the server, knowing its default agent and
 * workspace, claims them at start ({@link Store.claimUnplaced}): which agent is the default is
 * configuration, not schema.
 */
export const PLACEMENT_MIGRATION = `
  ALTER TABLE conversations ADD COLUMN agent_id TEXT;
  ALTER TABLE conversations ADD COLUMN workspace_id TEXT;
  ALTER TABLE conversations ADD COLUMN workdir TEXT;   -- private: never sent to a client
  ALTER TABLE conversations ADD COLUMN branch TEXT;
  CREATE INDEX conversations_agent_session ON conversations (agent_id, session_id);

  -- Global model and effort per agent. The row of agent '' holds what was global before, until
  -- the default agent claims it.
  CREATE TABLE agent_settings (
    agent_id  TEXT PRIMARY KEY,
    model     TEXT,
    provider  TEXT,
    effort    TEXT
  );
  INSERT INTO agent_settings (agent_id, model, provider, effort)
    SELECT '', model, provider, effort FROM global_settings WHERE id = 1;
`;
