/**
 * What a connection (or an HTTP request) authenticated as: the owner (the
 * master secret) or one paired device (its own secret, the `devices`
 * extension). Revoking a device closes the peers whose principal names it
 * (found through the Fanout's `peers()`).
 */
export type Principal = { readonly kind: "owner" } | { readonly kind: "device"; readonly deviceId: string };

/** The owner, authenticated with the master secret. */
export const OWNER: Principal = Object.freeze({ kind: "owner" });

/** Turns a presented secret into who it authenticates, or undefined when it authenticates nobody. */
export type Authenticate = (secret: string) => Principal | undefined;

/** For logs: the principal's kind and, for a device, its ID (never a secret). */
export function principalLog(principal: Principal): { principal: string; device?: string } {
  return principal.kind === "device"
    ? { principal: "device", device: principal.deviceId }
    : { principal: "owner" };
}

/** The paired device a principal is, or null for the owner (and for a peer before its hello). */
export function deviceIdOf(principal: Principal | null | undefined): string | null {
  return principal?.kind === "device" ? principal.deviceId : null;
}

/** The reader of the master secret (`inbox`); a device's reader is its device ID. */
export const OWNER_READER = "owner";

/**
 * The reader a principal is (`inbox`: who has read what): `"owner"` for the master secret, the
 * device's ID for a paired device (32 hex, so never `"owner"`); null before a hello succeeded.
 */
export function readerOf(principal: Principal | null | undefined): string | null {
  if (!principal) return null;
  return principal.kind === "device" ? principal.deviceId : OWNER_READER;
}
