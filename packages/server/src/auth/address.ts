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
 * Whose `X-Forwarded-For` is believed: any loopback peer (a Caddy on the same host; the default),
 * no peer, or only the listed addresses. Any local user can connect from loopback, so `loopback`
 * lets them name the address their guesses count against; `none` or the proxy's own address
 * (a Caddy on a port only it can use, a Docker bridge) closes that.
 */
export type TrustedProxy = "loopback" | "none" | readonly string[];

/** Whether `a` and `b` are one IP address (IPv6 spellings and the IPv4-mapped form compared as such). */
function sameAddress(a: string, b: string): boolean {
  const x = normalise(a);
  const y = normalise(b);
  if (isIP(x) === 6 && isIP(y) === 6) return ipv6Groups(x).join(":") === ipv6Groups(y).join(":");
  return x === y;
}

/** Whether a direct peer's `X-Forwarded-For` is believed under `trusted`. */
export function isTrustedProxy(peer: string, trusted: TrustedProxy): boolean {
  if (trusted === "none") return false;
  if (trusted === "loopback") return isLoopback(peer);
  return trusted.some((proxy) => sameAddress(proxy, peer));
}

/** Whether `value` is a valid {@link TrustedProxy} (a list of IP addresses, `loopback` or `none`). */
export function isTrustedProxySetting(value: unknown): value is TrustedProxy {
  if (value === "loopback" || value === "none") return true;
  return Array.isArray(value) && value.every((entry) => typeof entry === "string" && isIP(entry) !== 0);
}

/**
 * The source address used for lockout. `X-Forwarded-For` is honoured only when the direct peer is
 * a trusted proxy (by default any loopback peer, see {@link TrustedProxy}); then its *last* entry
 * is used, because that is the one the proxy appended and the earlier ones are client-controlled.
 * A malformed last entry falls back to the direct peer.
 */
export function clientAddress(
  remote: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxy,
): string {
  const peer = normalise(remote ?? "unknown");
  if (forwardedFor === undefined || !isTrustedProxy(peer, trusted)) return peer;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor;
  const last = header.split(",").pop()?.trim() ?? "";
  return isIP(last) ? normalise(last) : peer;
}

/** The eight 16-bit groups of an IPv6 address (zone stripped, `::` expanded, a dotted tail as two). */
export function ipv6Groups(addr: string): number[] {
  const bare = addr.split("%")[0]!;
  const parse = (part: string) =>
    part === ""
      ? []
      : part.split(":").flatMap((group) => {
          if (!group.includes(".")) return [Number.parseInt(group, 16)];
          const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head = "", tail] = bare.split("::");
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The key an address is locked out under: an IPv4 address itself, an IPv6 address's /64. One
 * IPv6 subscriber usually holds a whole /64 (RFC 6177), so keying single IPv6 addresses would
 * hand an attacker 2^64 fresh sets of five guesses.
 */
export function lockoutKey(addr: string): string {
  if (isIP(addr) !== 6) return addr;
  const prefix = ipv6Groups(addr)
    .slice(0, 4)
    .map((group) => group.toString(16));
  return `${prefix.join(":")}::/64`;
}
