import type Database from "better-sqlite3";
import { ACTIVITY_PLAN_MIGRATION, ACTIVITY_TOOLS_MIGRATION } from "./activity.js";
import { CHANGES_MIGRATION } from "./changes.js";
import { CREATORS_MIGRATION } from "./creators.js";
import { DEVICES_MIGRATION } from "./devices.js";
import { INBOX_MIGRATION } from "./inbox.js";
import { MODES_MIGRATION } from "./modes.js";
import { PLACEMENT_MIGRATION } from "./placement-migration.js";
import { PUSH_DEVICE_MIGRATION, PUSH_MIGRATION } from "./push.js";
import { RESUME_MIGRATION } from "./resume-migration.js";
import { SCHEDULES_MIGRATION } from "./schedules.js";
import { SENT_REQUESTS_PRINCIPAL_MIGRATION } from "./sent-requests.js";

/**
 * Ordered schema migrations. Step `i` moves the schema from version `i` to
 * `i + 1` (`PRAGMA user_version`). Append new steps; never edit a shipped one.
 * Settings (v2), attachments (v3), paired devices (v4), push subscriptions (v5), the resume log,
 * remembered sends and queued runs (v6) and schedules (v7) were added as later steps.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE conversations (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    session_id    TEXT,
    source        TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_active   INTEGER,
    deleted_at    INTEGER,              -- tombstone: deleted conversations keep their row
    user_renamed  INTEGER NOT NULL DEFAULT 0  -- a user-chosen name wins over agent title sync
  );
  CREATE INDEX conversations_session ON conversations (session_id);

  CREATE TABLE messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,  -- message_id on the wire is "m<id>"
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text            TEXT NOT NULL,
    ts              INTEGER,
    run_id          TEXT
  );
  CREATE INDEX messages_page ON messages (conversation_id, id);

  CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'cancelled', 'failed')),
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    error           TEXT
  );
  CREATE INDEX runs_conversation ON runs (conversation_id, started_at);

  CREATE TABLE tool_calls (
    run_id          TEXT NOT NULL REFERENCES runs (run_id),
    tool_call_id    TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    status          TEXT NOT NULL,
    args_json       TEXT,
    duration_ms     INTEGER,
    error           TEXT,
    ts              INTEGER NOT NULL,
    PRIMARY KEY (run_id, tool_call_id)
  );
  `,
  // v2: settings. The global row holds the model/effort defaults; a
  // conversation row holds its YOLO flag and overrides. NULL means "not set":
  // the conversation falls back to the global value, the global one to the agent's default.
  `
  CREATE TABLE global_settings (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    model     TEXT,
    provider  TEXT,
    effort    TEXT
  );
  INSERT INTO global_settings (id) VALUES (1);

  CREATE TABLE conversation_settings (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id),
    yolo            INTEGER NOT NULL DEFAULT 0,
    model           TEXT,
    provider        TEXT,
    effort          TEXT
  );
  `,
  // v3: attachments — the index of the blobs under <dataDir>/attachments/blobs.
  `
  CREATE TABLE attachments (
    id              TEXT PRIMARY KEY,      -- 32 hex, also the blob's file name
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    direction       TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    filename        TEXT NOT NULL,         -- sanitised display name, never a path
    mime_type       TEXT NOT NULL,
    size            INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    inline_image    INTEGER NOT NULL,
    message_id      TEXT,                  -- inbound: null until a chat.send claims it; outbound: the run's draft
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER                -- null: kept forever (retention 0)
  );
  CREATE INDEX attachments_conversation ON attachments (conversation_id, created_at);
  CREATE INDEX attachments_expiry ON attachments (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // v4 (`devices` extension): paired devices, their secrets as SHA-256 only.
  DEVICES_MIGRATION,
  // v5 (`push` extension): push subscriptions (store/push.ts).
  PUSH_MIGRATION,
  // v6 (`resume`, `queue`): the resume log, remembered sends and queued runs (store/resume-migration.ts).
  RESUME_MIGRATION,
  // v7 (`schedules` extension): scheduled prompts (store/schedules.ts).
  SCHEDULES_MIGRATION,
  // v8: who made each schedule and queued run, and who switched YOLO on (store/creators.ts).
  CREATORS_MIGRATION,
  // v9: push subscriptions bound to their device by a cascading foreign key (store/push.ts).
  PUSH_DEVICE_MIGRATION,
  // v10: remembered sends record their sender, kept per sender up to a bound (store/sent-requests.ts).
  SENT_REQUESTS_PRINCIPAL_MIGRATION,
  // v11 (`modes` extension): each conversation's chosen mode, its agent's modes and commands (store/modes.ts).
  MODES_MIGRATION,
  // v12 (`inbox` extension): archive state, readers and read marks, the transcript's search index (store/inbox.ts).
  INBOX_MIGRATION,
  // v13 (`activity` extension): each tool call's detail (store/activity.ts).
  ACTIVITY_TOOLS_MIGRATION,
  // v14 (`activity` extension): each conversation's latest agent plan and usage (store/activity.ts).
  ACTIVITY_PLAN_MIGRATION,
  // v15 (`changes` extension): each conversation's base commit and changes fingerprint (store/changes.ts).
  CHANGES_MIGRATION,
  // v16 (`workspaces` extension; v15 is `changes`'): each conversation's agent, workspace, private
  // working directory and branch; global settings per agent (store/placement-migration.ts).
  PLACEMENT_MIGRATION,
];

/** Bring the database up to the newest schema, one transaction per step. */
export function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`database schema v${current} is newer than this server (v${MIGRATIONS.length})`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
