import type { IncomingHttpHeaders } from "node:http";

/**
 * The secrets an HTTP request presents: `Authorization: Bearer <secret>`,
 * `Authorization: ApiKey <secret>` (scheme case-insensitive) and
 * `X-Pheby-Secret: <secret>`. Empty when it presents none.
 */
export function presentedSecrets(headers: IncomingHttpHeaders): string[] {
  const found: string[] = [];
  const auth = headers.authorization;
  if (typeof auth === "string") {
    const match = /^(?:bearer|apikey)[ ]+(\S.*)$/i.exec(auth.trim());
    if (match) found.push(match[1]!);
  }
  const header = headers["x-pheby-secret"];
  if (typeof header === "string" && header !== "") found.push(header);
  return found;
}
