import type Database from "better-sqlite3";

/**
 * The schema step of the `devices` extension (one revocable secret per paired phone), a step of `MIGRATIONS`
 * in store/migrations.ts. A device's secret is never stored: only its SHA-256 (see docs/security.md, "Device
 * secrets"). Revoking deletes the row, hash included.
 */
export const DEVICES_MIGRATION = `
  CREATE TABLE devices (
    id           TEXT PRIMARY KEY,       -- device_id on the wire: 32 hex, server-generated
    name         TEXT,                   -- display name (pair.create's, else the phone's); null when neither gave one
    secret_hash  BLOB NOT NULL UNIQUE,   -- SHA-256 of the device secret
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER                 -- null until the device first authenticates with its secret
  );
`;

/** A paired device as stored (timestamps in ms); the hash stays in the store unless asked for. */
export interface DeviceRow {
  id: string;
  name: string | null;
  created_at: number;
  last_seen_at: number | null;
}

/** What the credential check needs of a device: its ID and the SHA-256 of its secret. */
export interface DeviceCredential {
  id: string;
  secret_hash: Buffer;
}

/** Persisted paired devices. Synchronous, like the rest of the store. */
export class DeviceStore {
  readonly #credentials: Database.Statement<[], DeviceCredential>;

  constructor(private readonly db: Database.Database) {
    // Prepared once: it runs at every hello and every HTTP request.
    this.#credentials = db.prepare("SELECT id, secret_hash FROM devices");
  }

  insert(row: DeviceRow & { secret_hash: Buffer }): void {
    this.db
      .prepare(
        "INSERT INTO devices (id, name, secret_hash, created_at, last_seen_at) VALUES (@id, @name, @secret_hash, @created_at, @last_seen_at)",
      )
      .run(row);
  }

  /** Every device, oldest first. */
  list(): DeviceRow[] {
    return this.db
      .prepare("SELECT id, name, created_at, last_seen_at FROM devices ORDER BY created_at, rowid")
      .all() as DeviceRow[];
  }

  count(): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM devices").get() as { n: number }).n;
  }

  /** Every device's ID and secret hash (read at each authentication, so a revoke by another process counts at once). */
  credentials(): DeviceCredential[] {
    return this.#credentials.all();
  }

  exists(id: string): boolean {
    return this.db.prepare("SELECT 1 FROM devices WHERE id = ?").get(id) !== undefined;
  }

  touch(id: string, at: number): void {
    this.db.prepare("UPDATE devices SET last_seen_at = ? WHERE id = ?").run(at, id);
  }

  /** Delete a device; false when there is none with this ID. */
  delete(id: string): boolean {
    return this.db.prepare("DELETE FROM devices WHERE id = ?").run(id).changes > 0;
  }

  /** Delete every device; returns their IDs. */
  deleteAll(): string[] {
    return this.db.transaction(() => {
      const ids = (this.db.prepare("SELECT id FROM devices").all() as { id: string }[]).map((r) => r.id);
      this.db.prepare("DELETE FROM devices").run();
      return ids;
    })();
  }
}
