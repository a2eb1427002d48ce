// Where the console keeps its connection settings. The secret lives in
// sessionStorage only (gone when the tab closes, never in localStorage, never
// in the URL); the server URL is not secret and is remembered in localStorage.

const URL_KEY = "pheby.url";
const SECRET_KEY = "pheby.secret";

/** The WebSocket URL of the server that served this page (`/console/` → `/ws`). */
export function defaultServerUrl(location: Location): string {
  if (location.protocol !== "http:" && location.protocol !== "https:") return "ws://127.0.0.1:8620/ws";
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const base = location.pathname.replace(/\/console(\/.*)?$/, "").replace(/\/[^/]*$/, "");
  return `${scheme}//${location.host}${base}/ws`;
}

/** Saved settings, if any. */
export function loadSession(): { url: string | null; secret: string | null } {
  return { url: localStorage.getItem(URL_KEY), secret: sessionStorage.getItem(SECRET_KEY) };
}

/** Remember a working URL and secret. */
export function saveSession(url: string, secret: string): void {
  localStorage.setItem(URL_KEY, url);
  sessionStorage.setItem(SECRET_KEY, secret);
}

/** Forget the secret (sign out, or the server refused it). */
export function forgetSecret(): void {
  sessionStorage.removeItem(SECRET_KEY);
}
