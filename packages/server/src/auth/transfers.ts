/**
 * The HTTP transfers (uploads, downloads) in flight per device, so revoking a
 * device can cut them at once instead of letting a 64 MiB transfer run on. The
 * owner is never revoked, so only device requests are tracked.
 */
export class Transfers {
  readonly #byDevice = new Map<string, Set<() => void>>();

  /**
   * Track one request of `deviceId`; `cut` ends it (e.g. destroys its socket).
   * Returns the function to call when the request is over.
   */
  track(deviceId: string, cut: () => void): () => void {
    let cuts = this.#byDevice.get(deviceId);
    if (!cuts) {
      cuts = new Set();
      this.#byDevice.set(deviceId, cuts);
    }
    cuts.add(cut);
    return () => {
      cuts.delete(cut);
      if (cuts.size === 0 && this.#byDevice.get(deviceId) === cuts) this.#byDevice.delete(deviceId);
    };
  }

  /** Cut every transfer of `deviceId`; returns how many there were. */
  cut(deviceId: string): number {
    const cuts = this.#byDevice.get(deviceId);
    this.#byDevice.delete(deviceId);
    for (const cut of cuts ?? []) cut();
    return cuts?.size ?? 0;
  }

  /** Devices with transfers in flight (for tests). */
  get size(): number {
    return this.#byDevice.size;
  }
}
