import type { ClientMessage, ClientMessageType, DecodeError, ErrorCode } from "@pheby/protocol";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import { activityHandlers } from "./activity.js";
import { changesHandlers } from "./changes.js";
import { chatHandlers } from "./chat.js";
import type { Answer, Handler, HandlerTable, ServerContext } from "./context.js";
import { conversationHandlers } from "./conversations.js";
import { decisionHandlers } from "./decisions.js";
import { deviceHandlers } from "./devices.js";
import { heartbeatHandlers } from "./heartbeat.js";
import { inboxHandlers } from "./inbox.js";
import { modelHandlers } from "./models.js";
import { modeHandlers } from "./modes.js";
import { pushHandlers } from "./push.js";
import { scheduleHandlers } from "./schedules.js";
import { workspaceHandlers } from "./workspaces.js";
import { yoloHandlers } from "./yolo.js";

/**
 * Every domain's handler table; an extension adds its table here. No feature check is needed: the
 * session decodes each frame with its connection's features, so a request of a feature the peer did
 * not enable is already `unknown_type` (`decodeClientFrame`, `EXTENSION_TYPES` in @pheby/protocol).
 */
export const HANDLER_MODULES: readonly HandlerTable[] = [
  heartbeatHandlers,
  conversationHandlers,
  chatHandlers,
  decisionHandlers,
  yoloHandlers,
  modelHandlers,
  deviceHandlers,
  pushHandlers,
  scheduleHandlers,
  activityHandlers,
  modeHandlers,
  inboxHandlers,
  changesHandlers,
  workspaceHandlers,
];

/** The typed error the requester is told instead of an answer. */
export interface Refusal {
  error: { code: ErrorCode; message: string };
}

/** Routes decoded requests to their handlers. */
export class Dispatcher {
  readonly #routes = new Map<string, Handler<ClientMessageType>>();

  constructor(tables: readonly HandlerTable[] = HANDLER_MODULES) {
    for (const handlers of tables) {
      for (const [type, handle] of Object.entries(handlers)) {
        this.#routes.set(type, handle as Handler<ClientMessageType>);
      }
    }
  }

  /**
   * Handle one decoded request of an authenticated peer and hand its answer to `deliver` (the
   * connection layer, which sends it), in the same synchronous stretch as a snapshot answer (`Snapshot`)
   * is built. Typed failures become that error; anything else is logged and answered with a generic
   * `internal_error` (no stack, no path).
   */
  async dispatch(
    ctx: ServerContext,
    peer: Peer,
    msg: ClientMessage,
    deliver: (answer: Answer | Refusal) => void,
  ): Promise<void> {
    let answer: Answer | Refusal;
    try {
      if (msg.type === "hello") throw new ProtocolError("bad_request", "already authenticated");
      const handle = this.#routes.get(msg.type);
      if (!handle) throw new ProtocolError("not_implemented", `${msg.type} is not implemented yet`);
      const handled = await handle(ctx, { peer, msg });
      answer = typeof handled === "function" ? handled() : handled;
    } catch (err) {
      if (err instanceof ProtocolError) answer = { error: { code: err.code, message: err.message } };
      else {
        ctx.log.error({ err, conn: peer.id, type: msg.type }, "handler failed");
        answer = { error: { code: "internal_error", message: "Internal server error" } };
      }
    }
    deliver(answer);
  }

  /**
   * The error of a frame the decoder rejected. An answer to a stale question is `*_not_found`
   * whatever else is wrong with it (docs/protocol.md): the ID is checked before the rest.
   */
  rejected(ctx: ServerContext, error: DecodeError): Refusal {
    const stale = error.answers && ctx.decisions.staleAnswer(error.answers);
    const { code, message } = stale ?? error;
    return { error: { code, message } };
  }
}
