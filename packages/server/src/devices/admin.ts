import { existsSync } from "node:fs";
import { join } from "node:path";
import { DB_FILE, Store } from "../store/store.js";
import type { Clock } from "../util/time.js";
import { systemClock } from "../util/time.js";
import { DeviceRegistry } from "./registry.js";

/** A paired device as the operator commands show it (no secret, no hash). */
export interface DeviceSummary {
  id: string;
  /** Null when neither the owner nor the phone named it. */
  name: string | null;
  createdAt: number;
  lastSeenAt: number | null;
}

/** The device registry of a data directory, for `pheby-server devices …` (see {@link openDeviceAdmin}). */
export interface DeviceAdmin {
  list(): DeviceSummary[];
  /** Revoke every device (their push subscriptions go with them); returns their IDs. */
  revokeAll(): string[];
  close(): void;
}

/**
 * Open the device registry of `dataDir` for an operator command, or undefined when the directory
 * holds no database (a wrong `PHEBY_DATA_DIR` must not create an empty one). It works with the
 * server stopped or running (SQLite WAL): a running server reads device hashes at every
 * authentication, so a revoked secret is refused from the next hello or HTTP request on, but the
 * revoked devices' open connections stay until they close or the server restarts. Their push
 * subscriptions go in the same statement (a cascading foreign key): a running server reads them at
 * every notification, so a revoked phone gets no push from then on.
 */
export function openDeviceAdmin(dataDir: string, clock: Clock = systemClock): DeviceAdmin | undefined {
  if (!existsSync(join(dataDir, DB_FILE))) return undefined;
  const store = new Store(dataDir);
  const registry = new DeviceRegistry(store.devices, clock);
  return {
    list: () =>
      registry.list().map((d) => ({
        id: d.id,
        name: d.name,
        createdAt: d.created_at,
        lastSeenAt: d.last_seen_at,
      })),
    revokeAll: () => registry.revokeAll(),
    close: () => store.close(),
  };
}
