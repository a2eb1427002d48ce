import { Hono } from "hono";
import type { Logger } from "pino";

/**
 * The HTTP routes. `GET /health` is the only unauthenticated route; unknown
 * routes get a JSON 404 that reveals nothing. `/ws` upgrades are handled on
 * the HTTP server's `upgrade` event (ws/socket-server.ts); a plain GET of
 * `/ws` lands here and is told to upgrade. Later domains (attachments) add
 * their routes to the returned app.
 */
export function createHttpApp(log: Logger): Hono {
  const app = new Hono();
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.get("/ws", (c) =>
    c.json({ error: { code: "bad_request", message: "WebSocket upgrade required" } }, 426),
  );
  app.notFound((c) => c.json({ error: { code: "not_found", message: "Not found" } }, 404));
  app.onError((err, c) => {
    log.error({ err }, "HTTP handler failed");
    return c.json({ error: { code: "internal_error", message: "Internal server error" } }, 500);
  });
  return app;
}
