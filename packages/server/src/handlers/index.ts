import type { ClientMessage, ClientMessageType } from "@pheby/protocol";
import { ProtocolError } from "../errors.js";
import type { Connection } from "../ws/connection.js";
import { chatHandlers } from "./chat.js";
import type { Handler, HandlerTable, ServerContext } from "./context.js";
import { conversationHandlers } from "./conversations.js";
import { decisionHandlers } from "./decisions.js";
import { heartbeatHandlers } from "./heartbeat.js";
import { modelHandlers } from "./models.js";
import { yoloHandlers } from "./yolo.js";

/** Every handler; later domains (attachments) add their table here. */
const HANDLERS: HandlerTable = {
  ...heartbeatHandlers,
  ...conversationHandlers,
  ...chatHandlers,
  ...decisionHandlers,
  ...yoloHandlers,
  ...modelHandlers,
};

/**
 * Dispatch one decoded request of an authenticated connection. Typed
 * failures become that error; anything else is logged and answered with a
 * generic `internal_error` (no stack, no path).
 */
export async function dispatch(ctx: ServerContext, conn: Connection, msg: ClientMessage): Promise<void> {
  const requestId = msg.request_id;
  try {
    if (msg.type === "hello") throw new ProtocolError("bad_request", "already authenticated");
    const handler = HANDLERS[msg.type] as Handler<ClientMessageType> | undefined;
    if (!handler) throw new ProtocolError("not_implemented", `${msg.type} is not implemented yet`);
    await handler(ctx, { conn, msg });
  } catch (err) {
    if (err instanceof ProtocolError) {
      conn.error(err.code, err.message, requestId);
    } else {
      ctx.log.error({ err, conn: conn.id, type: msg.type }, "handler failed");
      conn.error("internal_error", "Internal server error", requestId);
    }
  }
}
