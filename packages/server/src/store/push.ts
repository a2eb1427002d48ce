import type Database from "better-sqlite3";

/**
 * Migration step of the push subscriptions table (the `push` extension): v5 of `MIGRATIONS`
 * (store/migrations.ts). `created_by` is the credential that subscribed: `"owner"` (the master secret) or a paired
 * device's id (the `devices` extension). A shipped step never changes: {@link PUSH_DEVICE_MIGRATION} replaces
 * `created_by` by a foreign key.
 */
export const PUSH_MIGRATION = `
  CREATE TABLE push_subscriptions (
    id              TEXT PRIMARY KEY,         -- subscription_id on the wire, 32 hex
    endpoint        TEXT NOT NULL UNIQUE,     -- a capability: never logged, never sent back whole
    p256dh          TEXT NOT NULL,            -- the receiver's P-256 public key, base64url
    auth            TEXT NOT NULL,            -- the receiver's 16-byte auth secret, base64url
    device_name     TEXT,
    events          TEXT NOT NULL,            -- JSON array of the subscribed event kinds
    created_by      TEXT NOT NULL,            -- "owner", or a paired device's id
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,         -- the last (re-)subscribe
    last_used_at    INTEGER NOT NULL,         -- the later of the last subscribe and the last delivery
    last_success_at INTEGER,
    last_error      TEXT,
    last_error_at   INTEGER
  );
  CREATE INDEX push_subscriptions_lru ON push_subscriptions (last_used_at);
`;

/**
 * Migration step binding each subscription to the device that made it: `created_by` (`"owner"` or a
 * device's id, checked by nothing) becomes `device_id`, a foreign key to `devices` with
 * `ON DELETE CASCADE` (null: the owner, the master secret). Deleting a device row, whoever does it
 * (`device.revoke`, the operator's `devices revoke-all` from another process), deletes its
 * subscriptions in the same statement, and no subscription can be stored for a device that is gone.
 * SQLite cannot add a foreign key to an existing column, so the table is rebuilt (copy, drop,
 * rename); subscriptions of devices deleted earlier are not copied.
 */
export const PUSH_DEVICE_MIGRATION = `
  CREATE TABLE push_subscriptions_by_device (
    id              TEXT PRIMARY KEY,
    endpoint        TEXT NOT NULL UNIQUE,
    p256dh          TEXT NOT NULL,
    auth            TEXT NOT NULL,
    device_name     TEXT,
    events          TEXT NOT NULL,
    device_id       TEXT REFERENCES devices (id) ON DELETE CASCADE,  -- null: the owner (master secret)
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_used_at    INTEGER NOT NULL,
    last_success_at INTEGER,
    last_error      TEXT,
    last_error_at   INTEGER
  );
  INSERT INTO push_subscriptions_by_device
    SELECT id, endpoint, p256dh, auth, device_name, events, NULLIF(created_by, 'owner'), created_at,
           updated_at, last_used_at, last_success_at, last_error, last_error_at
    FROM push_subscriptions
    WHERE created_by = 'owner' OR created_by IN (SELECT id FROM devices);
  DROP TABLE push_subscriptions;
  ALTER TABLE push_subscriptions_by_device RENAME TO push_subscriptions;
  CREATE INDEX push_subscriptions_lru ON push_subscriptions (last_used_at);
  CREATE INDEX push_subscriptions_device ON push_subscriptions (device_id);
`;

/** At most this many subscriptions are kept; a new one beyond it replaces the least recently used. */
export const MAX_PUSH_SUBSCRIPTIONS = 50;

/** A stored subscription. */
export interface PushSubscriptionRow {
  id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  device_name: string | null;
  /** The subscribed event kinds (decoded from the JSON column). */
  events: string[];
  /** The paired device that subscribed, or null for the owner (the master secret). */
  device_id: string | null;
  created_at: number;
  updated_at: number;
  last_used_at: number;
  last_success_at: number | null;
  last_error: string | null;
  last_error_at: number | null;
}

/** What a `push.subscribe` stores. */
export interface NewPushSubscription {
  id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  device_name: string | null;
  events: readonly string[];
  device_id: string | null;
}
type RawRow = Omit<PushSubscriptionRow, "events"> & { events: string };

const decode = (row: RawRow): PushSubscriptionRow => ({ ...row, events: JSON.parse(row.events) as string[] });

/**
 * Push subscriptions in SQLite. Synchronous like the rest of the store: each call is one short
 * indexed statement (or one small transaction).
 */
export class PushStore {
  constructor(private readonly db: Database.Database) {}

  /**
   * Store a subscription; returns the stored row. Re-subscribing an endpoint updates its row in
   * place (keys, name, events, credential), keeping its id and creation time, and clears its last
   * error: a fresh subscription starts with a clean record. A new endpoint beyond
   * {@link MAX_PUSH_SUBSCRIPTIONS} evicts the least recently used subscription (oldest
   * `last_used_at`: neither re-subscribed nor delivered to for the longest time).
   */
  subscribe(sub: NewPushSubscription, now: number): { row: PushSubscriptionRow; evicted: string[] } {
    return this.db.transaction(() => {
      const existing = this.#byEndpoint(sub.endpoint);
      const values = { ...sub, events: JSON.stringify(sub.events), now };
      if (existing) {
        this.db
          .prepare(
            `UPDATE push_subscriptions SET p256dh = @p256dh, auth = @auth, device_name = @device_name,
               events = @events, device_id = @device_id, updated_at = @now, last_used_at = @now,
               last_error = NULL, last_error_at = NULL
             WHERE id = @id`,
          )
          .run({ ...values, id: existing.id });
        return { row: this.get(existing.id)!, evicted: [] };
      }
      const evicted: string[] = [];
      const excess = this.count() - MAX_PUSH_SUBSCRIPTIONS + 1;
      if (excess > 0) {
        const victims = this.db
          .prepare("SELECT id FROM push_subscriptions ORDER BY last_used_at, created_at, id LIMIT ?")
          .pluck()
          .all(excess) as string[];
        for (const id of victims) this.remove(id);
        evicted.push(...victims);
      }
      this.db
        .prepare(
          `INSERT INTO push_subscriptions (id, endpoint, p256dh, auth, device_name, events, device_id,
             created_at, updated_at, last_used_at)
           VALUES (@id, @endpoint, @p256dh, @auth, @device_name, @events, @device_id, @now, @now, @now)`,
        )
        .run(values);
      return { row: this.get(sub.id)!, evicted };
    })();
  }

  get(id: string): PushSubscriptionRow | undefined {
    const row = this.db.prepare("SELECT * FROM push_subscriptions WHERE id = ?").get(id) as
      | RawRow
      | undefined;
    return row && decode(row);
  }

  /** Every subscription, oldest first; only those device `deviceId` made when given (a device sees its own). */
  list(deviceId?: string): PushSubscriptionRow[] {
    const rows = (
      deviceId === undefined
        ? this.db.prepare("SELECT * FROM push_subscriptions ORDER BY created_at, id").all()
        : this.db
            .prepare("SELECT * FROM push_subscriptions WHERE device_id = ? ORDER BY created_at, id")
            .all(deviceId)
    ) as RawRow[];
    return rows.map(decode);
  }

  count(): number {
    return this.db.prepare("SELECT count(*) FROM push_subscriptions").pluck().get() as number;
  }

  /** Remove a subscription; false when there was none. */
  remove(id: string): boolean {
    return this.db.prepare("DELETE FROM push_subscriptions WHERE id = ?").run(id).changes > 0;
  }

  /** A delivery succeeded: it counts as a use (eviction order). */
  recordSuccess(id: string, now: number): void {
    this.db
      .prepare("UPDATE push_subscriptions SET last_success_at = ?, last_used_at = ? WHERE id = ?")
      .run(now, now, id);
  }

  /** A delivery failed; `error` is a short description without the endpoint ("HTTP 500", "timeout"). */
  recordError(id: string, error: string, now: number): void {
    this.db
      .prepare("UPDATE push_subscriptions SET last_error = ?, last_error_at = ? WHERE id = ?")
      .run(error, now, id);
  }

  #byEndpoint(endpoint: string): RawRow | undefined {
    return this.db.prepare("SELECT * FROM push_subscriptions WHERE endpoint = ?").get(endpoint) as
      | RawRow
      | undefined;
  }
}
