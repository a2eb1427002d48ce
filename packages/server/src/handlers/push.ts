import { type HandlerTable, NO_ANSWER, requireAuthorized } from "./context.js";

/**
 * The `push` extension's requests (a peer that did not enable it gets `unknown_type`). A
 * subscription records the device that created it (none: the owner); the owner sees and removes
 * them all. After each await the requester is checked again: a device revoked meanwhile stores
 * nothing and is told nothing.
 */
export const pushHandlers: HandlerTable = {
  "push.subscribe": async (ctx, req) => {
    const checked = await ctx.push.check(req.msg);
    requireAuthorized(ctx, req.peer);
    return {
      rule: "requester",
      reply: { type: "push.subscribed", subscription_id: ctx.push.store(checked, req.peer.principal) },
    };
  },
  "push.unsubscribe": (ctx, req) => {
    ctx.push.unsubscribe(req.msg.subscription_id, req.peer.principal);
    return {
      rule: "requester",
      reply: { type: "push.unsubscribed", subscription_id: req.msg.subscription_id },
    };
  },
  "push.list": (ctx, req) => ({
    rule: "requester",
    reply: { type: "push.subscriptions", subscriptions: ctx.push.list(req.peer.principal) },
  }),
  // The test push itself re-reads its subscription before each attempt (gone with its device).
  "push.test": async (ctx, req) => {
    const tested = await ctx.push.test(req.msg.subscription_id, req.peer.principal);
    requireAuthorized(ctx, req.peer);
    return { rule: "requester", reply: tested };
  },
  // No reply: a hint about what the UI shows.
  presence: (ctx, req) => {
    ctx.push.setPresence(req.peer, req.msg);
    return NO_ANSWER;
  },
};
