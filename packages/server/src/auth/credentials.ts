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
 * header forms alike (a request presenting more than one is refused before it gets here, so one
 * request is one comparison). The presented secret is hashed once and compared with the master
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
   * The principal of the secret (the owner, else the device whose hash matches), or undefined.
   * A device that matches has its `last_seen_at` recorded (throttled by the registry).
   */
  resolve(presented: string): Principal | undefined {
    const digest = secretDigest(presented);
    const owner = timingSafeEqual(this.#master, digest);
    let deviceId: string | undefined;
    for (const device of this.devices.credentials()) {
      const match = timingSafeEqual(device.secret_hash, digest);
      if (match && deviceId === undefined) deviceId = device.id;
    }
    if (owner) return OWNER;
    if (deviceId === undefined) return undefined;
    this.devices.seen(deviceId);
    return { kind: "device", deviceId };
  }
}
