import type Database from "better-sqlite3";

/**
 * Migration step of the `modes` extension, appended to `MIGRATIONS` in `migrations.ts`: per
 * conversation, the mode it chose and who chose it, and what its agent last said (its modes, the mode
 * its session opened in, its slash commands), so `modes.list` and `commands.list` are answered without
 * starting an agent and the choice outlives agent and server restarts.
 */
export const MODES_MIGRATION = `
  CREATE TABLE conversation_modes (
    conversation_id      TEXT PRIMARY KEY REFERENCES conversations (id),
    chosen_mode_id       TEXT,                -- mode.set's (or the agent's own change); NULL: none chosen
    chosen_device_id     TEXT,                -- the paired device that chose it (NULL: the owner, or the agent)
    chosen_auto_approves INTEGER NOT NULL DEFAULT 0 CHECK (chosen_auto_approves IN (0, 1)),
    agent_mode_id        TEXT,                -- the mode its session opened in (configured, else the agent's default)
    modes_json           TEXT,                -- [{ id, name, description }] the agent last offered; NULL: none known
    commands_json        TEXT                 -- [{ name, description, hint }] it last announced; NULL: none known
  );
  CREATE INDEX conversation_modes_device ON conversation_modes (chosen_device_id) WHERE chosen_device_id IS NOT NULL;
`;

/** One mode as stored: the agent's words, not yet bounded for the wire. */
export interface StoredMode {
  id: string;
  name: string;
  description: string | null;
}

/** One slash command as stored. */
export interface StoredCommand {
  name: string;
  description: string;
  hint: string | null;
}

/** A conversation's modes row (all null when it has none). */
export interface ConversationModes {
  chosenModeId: string | null;
  chosenDeviceId: string | null;
  chosenAutoApproves: boolean;
  agentModeId: string | null;
  modes: StoredMode[] | null;
  commands: StoredCommand[] | null;
}

const NONE: ConversationModes = {
  chosenModeId: null,
  chosenDeviceId: null,
  chosenAutoApproves: false,
  agentModeId: null,
  modes: null,
  commands: null,
};

interface Row {
  chosen_mode_id: string | null;
  chosen_device_id: string | null;
  chosen_auto_approves: number;
  agent_mode_id: string | null;
  modes_json: string | null;
  commands_json: string | null;
}

/** Persisted modes and commands per conversation. Synchronous, like the rest of the store. */
export class ModeStore {
  constructor(private readonly db: Database.Database) {}

  /** A conversation's row (every field null when nothing is known). */
  get(conversationId: string): ConversationModes {
    const row = this.db
      .prepare(
        "SELECT chosen_mode_id, chosen_device_id, chosen_auto_approves, agent_mode_id, modes_json, commands_json FROM conversation_modes WHERE conversation_id = ?",
      )
      .get(conversationId) as Row | undefined;
    if (!row) return NONE;
    return {
      chosenModeId: row.chosen_mode_id,
      chosenDeviceId: row.chosen_device_id,
      chosenAutoApproves: row.chosen_auto_approves === 1,
      agentModeId: row.agent_mode_id,
      modes: row.modes_json === null ? null : (JSON.parse(row.modes_json) as StoredMode[]),
      commands: row.commands_json === null ? null : (JSON.parse(row.commands_json) as StoredCommand[]),
    };
  }

  /** Record the conversation's chosen mode (null: none), who chose it and whether it approves without asking. */
  choose(
    conversationId: string,
    modeId: string | null,
    deviceId: string | null,
    autoApproves: boolean,
  ): void {
    this.#upsert(
      conversationId,
      "chosen_mode_id = excluded.chosen_mode_id, chosen_device_id = excluded.chosen_device_id, chosen_auto_approves = excluded.chosen_auto_approves",
      { chosen_mode_id: modeId, chosen_device_id: deviceId, chosen_auto_approves: autoApproves ? 1 : 0 },
    );
  }

  /** Record the modes the agent offers and the mode its session opened in. */
  setModes(conversationId: string, modes: StoredMode[], agentModeId: string | null): void {
    this.#upsert(conversationId, "modes_json = excluded.modes_json, agent_mode_id = excluded.agent_mode_id", {
      modes_json: JSON.stringify(modes),
      agent_mode_id: agentModeId,
    });
  }

  /** Record the commands the agent announced. */
  setCommands(conversationId: string, commands: StoredCommand[]): void {
    this.#upsert(conversationId, "commands_json = excluded.commands_json", {
      commands_json: JSON.stringify(commands),
    });
  }

  /**
   * Undo the choices of a mode that approves without asking made by `deviceId` (revoked); returns
   * those conversations.
   */
  revoke(deviceId: string): string[] {
    return this.db.transaction(() => {
      const ids = (
        this.db
          .prepare(
            "SELECT conversation_id FROM conversation_modes WHERE chosen_device_id = ? AND chosen_auto_approves = 1",
          )
          .all(deviceId) as { conversation_id: string }[]
      ).map((r) => r.conversation_id);
      this.db
        .prepare(
          "UPDATE conversation_modes SET chosen_mode_id = NULL, chosen_device_id = NULL, chosen_auto_approves = 0 WHERE chosen_device_id = ? AND chosen_auto_approves = 1",
        )
        .run(deviceId);
      return ids;
    })();
  }

  #upsert(conversationId: string, assignments: string, values: Record<string, unknown>): void {
    const row = {
      chosen_mode_id: null,
      chosen_device_id: null,
      chosen_auto_approves: 0,
      agent_mode_id: null,
      modes_json: null,
      commands_json: null,
      ...values,
      conversation_id: conversationId,
    };
    this.db
      .prepare(
        `INSERT INTO conversation_modes (conversation_id, chosen_mode_id, chosen_device_id, chosen_auto_approves, agent_mode_id, modes_json, commands_json)
         VALUES (@conversation_id, @chosen_mode_id, @chosen_device_id, @chosen_auto_approves, @agent_mode_id, @modes_json, @commands_json)
         ON CONFLICT (conversation_id) DO UPDATE SET ${assignments}`,
      )
      .run(row);
  }
}

/**
 * Undo, in the database only, the choices of a mode that approves without asking made by devices that
 * no longer exist (as `forgetRevokedDevices` does for their other work); returns how many.
 */
export function forgetRevokedModes(db: Database.Database): number {
  return db
    .prepare(
      "UPDATE conversation_modes SET chosen_mode_id = NULL, chosen_device_id = NULL, chosen_auto_approves = 0 WHERE chosen_auto_approves = 1 AND chosen_device_id IS NOT NULL AND chosen_device_id NOT IN (SELECT id FROM devices)",
    )
    .run().changes;
}
