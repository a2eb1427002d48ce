import { iso } from "../util/time.js";
import { type HandlerTable, reply } from "./context.js";

/** ping → pong (the ws-level heartbeat lives in ws/socket-server.ts). */
export const heartbeatHandlers: HandlerTable = {
  ping: (ctx, req) => reply(req, { type: "pong", ts: iso(ctx.clock.now()) }),
};
