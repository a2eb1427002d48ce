import { iso } from "../util/time.js";
import type { HandlerTable } from "./context.js";

/** ping → pong (the ws-level heartbeat lives in transport/ws/). */
export const heartbeatHandlers: HandlerTable = {
  ping: (ctx) => ({ rule: "requester", reply: { type: "pong", ts: iso(ctx.clock.now()) } }),
};
