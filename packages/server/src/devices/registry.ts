import { randomBytes } from "node:crypto";
import { secretDigest } from "../auth/secret.js";
import type { DeviceCredential, DeviceRow, DeviceStore } from "../store/devices.js";
import { newId } from "../util/ids.js";
import type { Clock } from "../util/time.js";
import { type PairingCode, PairingCodes } from "./pairing.js";

/**
 * Bound on paired devices (open pairing codes count too). Every authentication compares the
 * presented secret with every device's hash, so the bound keeps that cost small and fixed.
 */
export const MAX_DEVICES = 100;
/** `last_seen_at` is written at most once per device in this interval, so a download storm does not write per request. */
export const SEEN_WRITE_INTERVAL_MS = 60 * 1000;

/** A device just paired: the only moment its secret exists outside the phone. */
export interface PairedDevice {
  id: string;
  name: string | null;
  /** 256 random bits, base64url (43 characters). Never stored, never logged. */
  secret: string;
}

/** Opening a pairing code failed because {@link MAX_DEVICES} devices (and codes) exist. */
export class DeviceLimitReached extends Error {
  override readonly name = "DeviceLimitReached";
  constructor() {
    super(`at most ${MAX_DEVICES} devices can be paired; revoke one first`);
  }
}

/**
 * The paired devices: pairing codes (in memory), devices (SQLite, secrets as SHA-256 only), and
 * the throttled `last_seen_at`. The credential check itself is auth/credentials.ts.
 */
export class DeviceRegistry {
  readonly #codes: PairingCodes;
  /** When `last_seen_at` was last written, per device (bounded by the number of devices). */
  readonly #seenWritten = new Map<string, number>();

  constructor(
    private readonly store: DeviceStore,
    private readonly clock: Clock,
  ) {
    this.#codes = new PairingCodes(clock);
  }

  /** Open a single-use pairing code; `name`, when given, names the device that redeems it. */
  openPairing(name?: string): PairingCode {
    if (this.store.count() + this.#codes.size >= MAX_DEVICES) throw new DeviceLimitReached();
    return this.#codes.open(name);
  }

  /** Open pairing codes (for tests and bounds checks). */
  get openCodes(): number {
    return this.#codes.size;
  }

  /**
   * Redeem a pairing code and create the device: the owner's name for it if one was given, else
   * the phone's `deviceName`, else none. Undefined for a wrong, used or expired code (the caller counts that
   * towards the lockout). The code is spent before the device exists, so it cannot pair twice.
   */
  pair(code: string, deviceName?: string): PairedDevice | undefined {
    const opened = this.#codes.redeem(code);
    if (!opened) return undefined;
    const secret = randomBytes(32).toString("base64url");
    const device = { id: newId(), name: opened.name ?? deviceName ?? null, secret };
    this.store.insert({
      id: device.id,
      name: device.name,
      secret_hash: secretDigest(secret),
      created_at: this.clock.now(),
      last_seen_at: null,
    });
    return device;
  }

  /** Every paired device, oldest first. */
  list(): DeviceRow[] {
    return this.store.list();
  }

  /** True when a device with this ID is paired. */
  has(id: string): boolean {
    return this.store.exists(id);
  }

  /** Revoke a device: its secret stops working at the next check. False when the ID is unknown. */
  revoke(id: string): boolean {
    this.#seenWritten.delete(id);
    return this.store.delete(id);
  }

  /** Revoke every device; returns their IDs. */
  revokeAll(): string[] {
    this.#seenWritten.clear();
    return this.store.deleteAll();
  }

  /** Every device's ID and secret hash, fresh from the store. */
  credentials(): DeviceCredential[] {
    return this.store.credentials();
  }

  /** Record that a device authenticated; written at most once per {@link SEEN_WRITE_INTERVAL_MS}. */
  seen(id: string): void {
    const now = this.clock.now();
    const last = this.#seenWritten.get(id);
    if (last !== undefined && now - last < SEEN_WRITE_INTERVAL_MS) return;
    this.#seenWritten.set(id, now);
    this.store.touch(id, now);
  }
}
