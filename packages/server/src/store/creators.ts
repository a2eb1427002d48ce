import type Database from "better-sqlite3";
import { QUEUED_HOLDER_PREFIX } from "./attachments.js";
import { forgetRevokedModes } from "./modes.js";

/**
 * Migration step that records who set work in motion, appended to `MIGRATIONS` in `migrations.ts`:
 *
 * - `schedules.created_by` (`user` | `agent`), `confirmed` (an agent's schedule waits for a client to
 *   enable it) and `auto_approve` (YOLO may approve its runs; only the master secret sets it), and
 *   `device_id`: the paired device whose request made it (NULL: the owner, or the agent).
 * - `queued_runs.device_id`: the device that queued the follow-up (NULL: the owner, or the server);
 *   `schedule_id`: the schedule whose prompt joined the queue (NULL: a client's follow-up).
 * - `conversation_settings.yolo_device_id`: the device that last switched YOLO on (NULL: the owner).
 *
 * Revoking a device removes its schedules and queued runs and switches off the YOLO it switched on.
 * Schedules made before this step stay the user's, confirmed, without auto-approval.
 */
export const CREATORS_MIGRATION = `
  ALTER TABLE schedules ADD COLUMN created_by TEXT NOT NULL DEFAULT 'user' CHECK (created_by IN ('user', 'agent'));
  ALTER TABLE schedules ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1 CHECK (confirmed IN (0, 1));
  ALTER TABLE schedules ADD COLUMN auto_approve INTEGER NOT NULL DEFAULT 0 CHECK (auto_approve IN (0, 1));
  ALTER TABLE schedules ADD COLUMN device_id TEXT;
  CREATE INDEX schedules_device ON schedules (device_id) WHERE device_id IS NOT NULL;
  ALTER TABLE queued_runs ADD COLUMN device_id TEXT;
  ALTER TABLE queued_runs ADD COLUMN schedule_id TEXT;
  ALTER TABLE conversation_settings ADD COLUMN yolo_device_id TEXT;
`;

/** What {@link forgetRevokedDevices} removed. */
export interface ForgottenWork {
  schedules: number;
  queuedRuns: number;
  yolo: number;
  /** Choices of a mode that approves without asking, undone. */
  modes: number;
}

const GONE = "device_id IS NOT NULL AND device_id NOT IN (SELECT id FROM devices)";

/**
 * Remove, in the database only, what devices that no longer exist set in motion: their schedules and
 * queued runs (the queued runs' uploads are unclaimed again), the YOLO they switched on and their choices
 * of a mode that approves without asking. For the
 * operator's `devices revoke-all` (the server may be running: it reads all three at each use) and a
 * server's start (nothing is connected yet, so nobody needs telling). A live `device.revoke` does the
 * same through the scheduler, the queue and the settings, which tell the other connections.
 */
export function forgetRevokedDevices(db: Database.Database): ForgottenWork {
  return db.transaction(() => {
    const queued = db.prepare(`SELECT run_id FROM queued_runs WHERE ${GONE}`).all() as { run_id: string }[];
    const release = db.prepare("UPDATE attachments SET message_id = NULL WHERE message_id = ?");
    for (const { run_id } of queued) release.run(`${QUEUED_HOLDER_PREFIX}${run_id}`);
    const queuedRuns = db.prepare(`DELETE FROM queued_runs WHERE ${GONE}`).run().changes;
    const schedules = db.prepare(`DELETE FROM schedules WHERE ${GONE}`).run().changes;
    const yolo = db
      .prepare(
        "UPDATE conversation_settings SET yolo = 0, yolo_device_id = NULL WHERE yolo_device_id IS NOT NULL AND yolo_device_id NOT IN (SELECT id FROM devices)",
      )
      .run().changes;
    const modes = forgetRevokedModes(db);
    return { schedules, queuedRuns, yolo, modes };
  })();
}
