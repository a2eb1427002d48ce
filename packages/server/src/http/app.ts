import type { HttpBindings } from "@hono/node-server";
import { Hono } from "hono";
import type { Logger } from "pino";
import { type AttachmentRouteDeps, attachmentRoutes } from "../attachments/http.js";
import { attachmentCors } from "./cors.js";
import { type DecisionRouteDeps, decisionRoutes } from "./decisions.js";

/**
 * The HTTP routes. `GET /health` is the only unauthenticated route; unknown
 * routes get a JSON 404 that reveals nothing. `/ws` upgrades are handled on
 * the HTTP server's `upgrade` event (ws/socket-server.ts); a plain GET of
 * `/ws` lands here and is told to upgrade. Attachments: attachments/http.ts;
 * answers from a notification: http/decisions.ts.
 */
export function createHttpApp(
  log: Logger,
  attachments: AttachmentRouteDeps,
  corsOrigins: readonly string[],
  decisions: DecisionRouteDeps,
): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  attachmentCors(app, corsOrigins);
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.get("/ws", (c) =>
    c.json({ error: { code: "bad_request", message: "WebSocket upgrade required" } }, 426),
  );
  attachmentRoutes(app, attachments);
  decisionRoutes(app, decisions);
  app.notFound((c) => c.json({ error: { code: "not_found", message: "Not found" } }, 404));
  app.onError((err, c) => {
    log.error({ err }, "HTTP handler failed");
    return c.json({ error: { code: "internal_error", message: "Internal server error" } }, 500);
  });
  return app;
}
