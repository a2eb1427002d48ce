import { randomBytes } from "node:crypto";

/** A server-generated opaque 32-hex ID (conversations and runs). */
export function newId(): string {
  return randomBytes(16).toString("hex");
}
