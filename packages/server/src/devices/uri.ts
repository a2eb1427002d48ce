/** The scheme and host of a pairing URI: `pheby://pair?url=…&code=…`. */
export const PAIRING_URI_PREFIX = "pheby://pair?";

/**
 * The pairing URI a phone scans: `pheby://pair?url=<public WebSocket URL>&code=<code>`, both values
 * percent-encoded as query values (a URI parser, e.g. Android's `Uri.getQueryParameter`, decodes them).
 */
export function pairingUri(publicUrl: string, code: string): string {
  return `${PAIRING_URI_PREFIX}${new URLSearchParams({ url: publicUrl, code })}`;
}

/** True for an absolute `ws://` or `wss://` URL with no credentials, query or fragment. */
export function isPublicWebSocketUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    (url.protocol === "ws:" || url.protocol === "wss:") &&
    url.host !== "" &&
    url.username === "" &&
    url.password === "" &&
    url.search === "" &&
    url.hash === "" &&
    !value.includes("#") &&
    !value.includes("?")
  );
}
