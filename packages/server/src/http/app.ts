import type { HttpBindings } from "@hono/node-server";
import { Hono } from "hono";
import { type AttachmentRouteDeps, attachmentRoutes } from "../attachments/http.js";
import type { HttpAuthDeps } from "../auth/http.js";
import { attachmentCors } from "./cors.js";
import { type DecisionRouteDeps, decisionRoutes } from "./decisions.js";
import { type ConsoleFiles, mountConsole } from "./static-console.js";

/** What the HTTP routes need: one authentication and lockout for all of them, and what each route set serves. */
export interface HttpAppOptions
  extends HttpAuthDeps,
    Pick<AttachmentRouteDeps, "attachments" | "store" | "idleTimeoutMs">,
    Pick<DecisionRouteDeps, "decisions"> {
  /** The origins whose pages may call the attachment routes (CORS). */
  corsOrigins: readonly string[];
  /** The web console's files, served at the routes no API route takes; none when undefined. */
  consoleFiles: ConsoleFiles | undefined;
}

/**
 * The HTTP routes. `GET /health` is the only unauthenticated route; unknown
 * routes get a JSON 404 that reveals nothing. `/ws` upgrades are handled on
 * the HTTP server's `upgrade` event (ws/socket-server.ts); a plain GET of
 * `/ws` lands here and is told to upgrade. Attachments: attachments/http.ts;
 * answers from a notification: http/decisions.ts; the web console, when given: http/static-console.ts.
 */
export function createHttpApp(options: HttpAppOptions): Hono<{ Bindings: HttpBindings }> {
  const { log, corsOrigins, attachments, store, decisions, idleTimeoutMs, consoleFiles, ...auth } = options;
  const app = new Hono<{ Bindings: HttpBindings }>();
  attachmentCors(app, corsOrigins);
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.get("/ws", (c) =>
    c.json({ error: { code: "bad_request", message: "WebSocket upgrade required" } }, 426),
  );
  // Both route sets check the same credentials and count failures against the same lockout.
  attachmentRoutes(app, { ...auth, log, attachments, store, idleTimeoutMs });
  decisionRoutes(app, { ...auth, log, decisions });
  app.notFound((c) => c.json({ error: { code: "not_found", message: "Not found" } }, 404));
  app.onError((err, c) => {
    log.error({ err }, "HTTP handler failed");
    return c.json({ error: { code: "internal_error", message: "Internal server error" } }, 500);
  });
  if (consoleFiles) mountConsole(app, consoleFiles);
  return app;
}
