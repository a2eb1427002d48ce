import { timingSafeEqual } from "node:crypto";
import { OWNER, type Principal } from "./principal.js";
import { secretDigest } from "./secret.js";

/** What the resolver needs of the device registry (devices/registry.ts): hashes, and a note of use. */
export interface DeviceCredentials {
  credentials(): readonly { id: string; secret_hash: Buffer }[];
  seen(deviceId: string): void;
}

/**
 * Resolves a presented secret to its {@link Principal}, for `hello.secret` and the HTTP routes'
 * header forms alike. Every presented secret is hashed once and compared with the master
 * secret's digest and with every device's hash, all of them, with `timingSafeEqual` and no early
 * exit: the time taken depends on the number of devices, never on whether or which one matched.
 */
export class CredentialResolver {
  readonly #master: Buffer;

  constructor(
    masterSecret: string,
    private readonly devices: DeviceCredentials,
  ) {
    this.#master = secretDigest(masterSecret);
  }

  /**
   * The principal of the first secret that matches (the owner before any device), or undefined.
   * A device that matches has its `last_seen_at` recorded (throttled by the registry).
   */
  resolve(presented: string | readonly string[]): Principal | undefined {
    const candidates = typeof presented === "string" ? [presented] : presented;
    const devices = this.devices.credentials();
    let owner = false;
    let deviceId: string | undefined;
    for (const candidate of candidates) {
      const digest = secretDigest(candidate);
      // Compare first, then combine: `||` after the call would skip nothing.
      const isOwner = timingSafeEqual(this.#master, digest);
      owner = isOwner || owner;
      for (const device of devices) {
        const match = timingSafeEqual(device.secret_hash, digest);
        if (match && deviceId === undefined) deviceId = device.id;
      }
    }
    if (owner) return OWNER;
    if (deviceId === undefined) return undefined;
    this.devices.seen(deviceId);
    return { kind: "device", deviceId };
  }
}
