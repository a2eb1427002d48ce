/**
 * Which browser pages may open the WebSocket. A browser sends `Origin` with every WebSocket
 * handshake and applies no same-origin rule to it, so without this check any page the owner opens
 * could connect and send wrong hellos until the owner's own address is locked out. Native clients
 * (the Android app, the CLI, Kotlin and Node clients) send no `Origin` and are not affected.
 */
export class OriginPolicy {
  readonly #allowed: ReadonlySet<string>;
  readonly #pinned: boolean;

  /**
   * @param publicUrl The server's public WebSocket URL: its origin (`wss://h/ws` → `https://h`) is
   *   the server's own. Without it, the origin of each request's `Host` header is.
   * @param listed Further origins (the CORS list, `PHEBY_CORS_ORIGINS`): a console on another host.
   */
  constructor(publicUrl: string | undefined, listed: readonly string[]) {
    const own = publicUrl === undefined ? undefined : pageOrigin(publicUrl);
    this.#pinned = own !== undefined;
    this.#allowed = new Set([...listed, ...(own === undefined ? [] : [own])]);
  }

  /** Whether a handshake with this `Origin` (undefined: none sent) and `Host` may proceed. */
  allows(origin: string | undefined, host: string | undefined): boolean {
    if (origin === undefined) return true;
    if (this.#allowed.has(origin)) return true;
    if (this.#pinned || host === undefined) return false;
    return ["http:", "https:"].some((scheme) => pageOrigin(`${scheme}//${host}`) === origin);
  }
}

/** The origin of a page served at `url`'s host: `ws:` → `http:`, `wss:` → `https:`; undefined when malformed. */
function pageOrigin(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    const scheme = { "ws:": "http:", "wss:": "https:" }[parsed.protocol] ?? parsed.protocol;
    if (scheme !== "http:" && scheme !== "https:") return undefined;
    // Re-parsed as http(s), so a default port (443, 80) disappears as it does from a browser's Origin.
    return new URL(`${scheme}//${parsed.host}`).origin;
  } catch {
    return undefined;
  }
}
