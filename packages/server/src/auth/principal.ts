/**
 * What a connection (or an HTTP request) authenticated as. Today there is one
 * credential, the owner's shared secret; per-device secrets (the `devices`
 * extension) add a kind here, and revoking a device closes the peers whose
 * principal names it (they are found through the Fanout's `peers()`).
 */
export type Principal = { readonly kind: "owner" };

/** The owner, authenticated with the shared secret. */
export const OWNER: Principal = Object.freeze({ kind: "owner" });

/** Turns a presented secret into who it authenticates, or undefined when it authenticates nobody. */
export type Authenticate = (secret: string) => Principal | undefined;

/** An {@link Authenticate} that knows only the owner's secret (compared by `checkSecret`, in constant time). */
export function ownerOnly(checkSecret: (candidate: string) => boolean): Authenticate {
  return (secret) => (checkSecret(secret) ? OWNER : undefined);
}
