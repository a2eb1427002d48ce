import type { HttpBindings } from "@hono/node-server";
import type { Hono } from "hono";

/**
 * CORS for the attachment routes and the approval/clarify answer routes, so a
 * console served from another origin can upload, download and answer. Off unless the operator lists origins: the routes are
 * authenticated by a header secret (never a cookie), so CORS grants a page
 * nothing it could not do without the secret, but exposing nothing by default
 * keeps the surface minimal. The WebSocket needs no CORS.
 */
export function attachmentCors(app: Hono<{ Bindings: HttpBindings }>, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  for (const path of ["/attachments", "/attachments/*", "/approvals/*", "/clarify/*"]) {
    app.use(path, async (c, next) => {
      const origin = c.req.header("origin");
      if (origin === undefined || !allowed.has(origin)) return next();
      // Set on the Node response: downloads stream straight to it, bypassing Hono's headers.
      const { outgoing } = c.env;
      outgoing.setHeader("Access-Control-Allow-Origin", origin);
      outgoing.setHeader("Vary", "Origin");
      outgoing.setHeader(
        "Access-Control-Expose-Headers",
        "Content-Disposition, Content-Length, Content-Range, Accept-Ranges",
      );
      if (c.req.method !== "OPTIONS") return next();
      outgoing.setHeader("Access-Control-Allow-Methods", "GET, POST");
      outgoing.setHeader(
        "Access-Control-Allow-Headers",
        "Authorization, Content-Type, X-Pheby-Secret, Range",
      );
      outgoing.setHeader("Access-Control-Max-Age", "600");
      return c.body(null, 204);
    });
  }
}
