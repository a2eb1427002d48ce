import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type Socket } from "node:net";
import { ipv6Groups } from "../auth/address.js";

/**
 * The SSRF rule of push endpoints. A subscription names a URL the server will POST to, so it
 * must not be a way to make the server call into the owner's network: endpoints are `https` and
 * every address they resolve to, and the address actually connected to, must be public. An
 * operator with a push service on the LAN (a self-hosted ntfy) sets `allowPrivate`, which also
 * allows plain `http`.
 */
export interface EndpointPolicy {
  allowPrivate: boolean;
}

/** An endpoint refused by the SSRF rule. The message never contains the endpoint (a capability). */
export class EndpointRefused extends Error {
  override readonly name = "EndpointRefused";
}

/** Longest endpoint URL accepted (real push services use well under 1,000 characters). */
export const MAX_ENDPOINT_LENGTH = 2_048;

// IANA special-purpose ranges that are not globally reachable unicast (RFC 6890 and its updates).
const NON_PUBLIC_V4: [string, number][] = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata services live here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast (deprecated)
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and broadcast
];
// IPv6: only global unicast (2000::/3, RFC 4291 and IANA's allocations) is public. Everything
// outside it is not: unique-local, link-local, multicast, the IPv4-compatible (::/96) and
// IPv4-translated (::ffff:0:0:0/96, SIIT: RFC 2765, RFC 6145) forms, local-use NAT64
// (64:ff9b:1::/48), SRv6 SIDs, discard and whatever is reserved today, so a form added later is
// refused until it is judged. The two forms that name the IPv4 address actually reached are judged
// by that address instead (embeddedIpv4).
// The special-purpose ranges inside 2000::/3 that are not globally reachable unicast.
const NON_PUBLIC_V6: [string, number][] = [
  ["2001::", 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID)
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: the embedded IPv4 address is reached through a relay
  ["3fff::", 20], // documentation
];

const NON_PUBLIC = new BlockList();
for (const [net, prefix] of NON_PUBLIC_V4) NON_PUBLIC.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of NON_PUBLIC_V6) NON_PUBLIC.addSubnet(net, prefix, "ipv6");
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet("2000::", 3, "ipv6");

/**
 * The IPv4 address an IPv6 address stands for, when connecting to it reaches that IPv4 address:
 * IPv4-mapped (`::ffff:0:0/96`, a dual-stack socket's IPv4 peer) and the well-known NAT64 prefix
 * (`64:ff9b::/96`, RFC 6052). Undefined for any other address.
 */
function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  const zero = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  const mapped = zero(0, 5) && g[5] === 0xffff;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6);
  if (!mapped && !nat64) return undefined;
  return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
}

/**
 * True for a globally reachable unicast address. IPv4-mapped and NAT64 (`64:ff9b::/96`) addresses
 * are judged by the IPv4 address they embed; any other IPv6 address must be global unicast
 * (`2000::/3`) outside its special-purpose ranges. Anything that is not an IP address, or carries
 * a zone, is not public.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0 || address.includes("%")) return false;
  if (family === 4) return !NON_PUBLIC.check(address, "ipv4");
  const v4 = embeddedIpv4(address);
  if (v4 !== undefined) return isPublicAddress(v4);
  return GLOBAL_UNICAST.check(address, "ipv6") && !NON_PUBLIC.check(address, "ipv6");
}

/** An IP literal's bare form (`[::1]` → `::1`), or undefined for a DNS name. */
function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}

/**
 * Check an endpoint's form: an absolute `https` URL (or `http` when private addresses are
 * allowed) with a host, no user info, at most {@link MAX_ENDPOINT_LENGTH} characters, and, when
 * its host is an IP literal, a public one. The WHATWG parser normalises numeric host forms
 * (`2130706433`, `0x7f.1`) to dotted IPv4 first, so none slips through as a "name".
 */
export function parseEndpoint(endpoint: string, policy: EndpointPolicy): URL {
  if (endpoint.length > MAX_ENDPOINT_LENGTH) {
    throw new EndpointRefused(`endpoint: longer than ${MAX_ENDPOINT_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new EndpointRefused("endpoint: not an absolute URL");
  }
  const schemes = policy.allowPrivate ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) {
    throw new EndpointRefused(
      policy.allowPrivate ? "endpoint: must be an https or http URL" : "endpoint: must be an https URL",
    );
  }
  if (url.username !== "" || url.password !== "") {
    throw new EndpointRefused("endpoint: must not carry user info");
  }
  if (url.hostname === "") throw new EndpointRefused("endpoint: has no host");
  const literal = literalAddress(url.hostname);
  if (literal !== undefined && !policy.allowPrivate && !isPublicAddress(literal)) {
    throw new EndpointRefused("endpoint: the address is not public");
  }
  return url;
}

/** The resolver the checks use: `dns.lookup` with every address (the OS resolver, `/etc/hosts` included). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    );
  });

/** Refuse a resolution that includes any non-public address (a mixed answer is a rebinding attempt). */
function requirePublic(addresses: LookupAddress[]): void {
  if (addresses.length === 0) throw new EndpointRefused("endpoint: the host does not resolve");
  if (!addresses.every((a) => isPublicAddress(a.address))) {
    throw new EndpointRefused("endpoint: the host resolves to an address that is not public");
  }
}

/**
 * The full check at subscribe time: {@link parseEndpoint}, then (unless private addresses are
 * allowed) every address the host resolves to must be public. Sends check again, for the address
 * actually connected to ({@link guardedLookup}, {@link checkPeer}), because DNS can change in
 * between (rebinding).
 */
export async function checkEndpoint(
  endpoint: string,
  policy: EndpointPolicy,
  resolve: Resolve = systemResolve,
): Promise<URL> {
  const url = parseEndpoint(endpoint, policy);
  if (policy.allowPrivate || literalAddress(url.hostname) !== undefined) return url;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(url.hostname);
  } catch {
    throw new EndpointRefused("endpoint: the host does not resolve");
  }
  requirePublic(addresses);
  return url;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect` / an HTTP agent: resolves with `resolve` and refuses the connection
 * unless every address is public (or private ones are allowed). Supports both call forms Node uses
 * (`all: true` when it races IPv4 and IPv6).
 */
export function guardedLookup(policy: EndpointPolicy, resolve: Resolve = systemResolve) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        try {
          if (!policy.allowPrivate) requirePublic(addresses);
        } catch (err) {
          callback(err as NodeJS.ErrnoException, []);
          return;
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
}

/**
 * Check the address a socket is actually connected to, once it connects, and destroy it before
 * anything is sent when the address is not public. Covers what no lookup sees (an IP literal is
 * never looked up) and whatever a resolver cache might hand the connection.
 */
export function checkPeer(socket: Socket, policy: EndpointPolicy): void {
  if (policy.allowPrivate) return;
  const check = () => {
    const remote = socket.remoteAddress;
    if (remote === undefined || !isPublicAddress(remote)) {
      socket.destroy(new EndpointRefused("endpoint: connected to an address that is not public"));
    }
  };
  if (socket.connecting) socket.once("connect", check);
  else check();
}
