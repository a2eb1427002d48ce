import { isIP } from "node:net";

/** Strip the IPv4-mapped IPv6 prefix so `::ffff:127.0.0.1` and `127.0.0.1` are one address. */
function normalise(addr: string): string {
  return addr.startsWith("::ffff:") && isIP(addr.slice(7)) === 4 ? addr.slice(7) : addr;
}

/** True for 127.0.0.0/8 and ::1 (also in IPv4-mapped form). */
export function isLoopback(addr: string): boolean {
  const a = normalise(addr);
  return a === "::1" || (isIP(a) === 4 && a.startsWith("127."));
}

/**
 * The source address used for lockout. `X-Forwarded-For` is honoured only when
 * the direct peer is loopback (the local Caddy); then its *last* entry is used,
 * because that is the one Caddy appended and the earlier ones are
 * client-controlled. A malformed last entry falls back to the direct peer.
 */
export function clientAddress(
  remote: string | undefined,
  forwardedFor: string | string[] | undefined,
): string {
  const peer = normalise(remote ?? "unknown");
  if (!isLoopback(peer) || forwardedFor === undefined) return peer;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor;
  const last = header.split(",").pop()?.trim() ?? "";
  return isIP(last) ? normalise(last) : peer;
}
