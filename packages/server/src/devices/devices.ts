import { CLOSE_CODES, type ServerMessageOf } from "@pheby/protocol";
import type { Logger } from "pino";
import type { Transfers } from "../auth/transfers.js";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import { type Clock, iso } from "../util/time.js";
import { DeviceLimitReached, type DeviceRegistry, type PairedDevice } from "./registry.js";
import { pairingUri } from "./uri.js";

/** What {@link Devices} works with. */
export interface DevicesDeps {
  registry: DeviceRegistry;
  /** The authenticated peers (the Fanout's registry), to close a revoked device's connections. */
  peers(): Iterable<Peer>;
  transfers: Transfers;
  clock: Clock;
  log: Logger;
  /** The public WebSocket URL pairing URIs carry (`PHEBY_PUBLIC_URL`); pairing is refused without it. */
  publicUrl: string | undefined;
}

/** Called with a revoked device's ID, after its connections and transfers are cut. */
export type RevokeListener = (deviceId: string) => void;

/**
 * The `devices` extension's operations, as the handlers and the handshake use them: open a pairing
 * code, pair, list, and revoke with everything revoking means (connections closed with 4401,
 * HTTP transfers cut, the secret refused from now on, its push subscriptions deleted with its row
 * by a cascading foreign key, and the {@link onRevoked} listeners told).
 */
export class Devices {
  readonly #listeners: RevokeListener[] = [];

  constructor(private readonly deps: DevicesDeps) {}

  /** `pair.create`: a pairing code and its URI, or the typed error saying why not. */
  createPairing(name?: string): ServerMessageOf<"pair.created"> {
    const { publicUrl } = this.deps;
    if (publicUrl === undefined)
      throw new ProtocolError(
        "not_implemented",
        "pairing needs the server's public WebSocket URL: set PHEBY_PUBLIC_URL (e.g. wss://pheby.example.com/ws)",
      );
    try {
      const opened = this.deps.registry.openPairing(name);
      this.deps.log.info({ expiresAt: iso(opened.expiresAt) }, "pairing code opened");
      return {
        type: "pair.created",
        code: opened.code,
        uri: pairingUri(publicUrl, opened.code),
        expires_at: iso(opened.expiresAt),
      };
    } catch (err) {
      if (err instanceof DeviceLimitReached) throw new ProtocolError("bad_request", err.message);
      throw err;
    }
  }

  /** A pairing hello's code: the new device, or undefined for a wrong, used or expired code. */
  pair(code: string, deviceName?: string): PairedDevice | undefined {
    const device = this.deps.registry.pair(code, deviceName);
    if (device) this.deps.log.info({ device: device.id }, "device paired");
    return device;
  }

  /** True while the device is paired (not revoked, here or by another process). */
  paired(deviceId: string): boolean {
    return this.deps.registry.has(deviceId);
  }

  /** `device.snapshot`'s devices, oldest first. */
  list(): ServerMessageOf<"device.snapshot">["devices"] {
    return this.deps.registry.list().map((d) => ({
      device_id: d.id,
      name: d.name,
      created_at: iso(d.created_at),
      last_seen_at: d.last_seen_at === null ? null : iso(d.last_seen_at),
    }));
  }

  /**
   * Revoke a device: its secret is deleted (refused from the next check on), its connections get
   * `unauthorized` "device revoked" and close 4401 at once, its HTTP transfers are cut (a partial
   * upload is removed by the upload's own cleanup), and the listeners run. False for an unknown ID.
   */
  revoke(deviceId: string): boolean {
    if (!this.deps.registry.revoke(deviceId)) return false;
    const frame = JSON.stringify({
      type: "error",
      error: { code: "unauthorized", message: "device revoked" },
      ts: iso(this.deps.clock.now()),
    } satisfies ServerMessageOf<"error">);
    let connections = 0;
    for (const peer of [...this.deps.peers()]) {
      if (peer.principal?.kind !== "device" || peer.principal.deviceId !== deviceId) continue;
      peer.send(frame, { type: "error" });
      peer.close(CLOSE_CODES.unauthorized, "device revoked");
      connections++;
    }
    const transfers = this.deps.transfers.cut(deviceId);
    for (const listener of this.#listeners) listener(deviceId);
    this.deps.log.info({ device: deviceId, connections, transfers }, "device revoked");
    return true;
  }

  /**
   * Run `listener` after each revoke: the hook for what other extensions keep per device and no
   * foreign key removes.
   */
  onRevoked(listener: RevokeListener): void {
    this.#listeners.push(listener);
  }
}
