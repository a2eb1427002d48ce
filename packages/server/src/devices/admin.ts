import { existsSync } from "node:fs";
import { join } from "node:path";
import { forgetRevokedDevices } from "../store/creators.js";
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
  /**
   * Revoke every device (their push subscriptions go with them) and remove the schedules and
   * queued runs they made and the YOLO they switched on; returns their IDs.
   */
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
 * every notification, so a revoked phone gets no push from then on. Their schedules and queued runs
 * are deleted and the YOLO they switched on is switched off in the same transaction; a running
 * server reads all three at each use, so none of them runs or auto-approves from then on, but its
 * other connections are not told and a run already in progress goes on: stop the server first, or
 * revoke over the socket (`device.revoke`), to cut those too.
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
    revokeAll: () =>
      store.transaction(() => {
        const ids = registry.revokeAll();
        forgetRevokedDevices(store.db);
        return ids;
      }),
    close: () => store.close(),
  };
}
