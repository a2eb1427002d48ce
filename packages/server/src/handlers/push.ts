import type { HandlerTable } from "./context.js";

/**
 * The `push` extension's requests (a peer that did not enable it gets `unknown_type`). A
 * subscription records the credential that created it; the owner sees and removes them all.
 */
export const pushHandlers: HandlerTable = {
  "push.subscribe": async (ctx, req) => ({
    reply: {
      type: "push.subscribed",
      subscription_id: await ctx.push.subscribe(req.msg, req.peer.principal),
    },
  }),
  "push.unsubscribe": (ctx, req) => {
    ctx.push.unsubscribe(req.msg.subscription_id, req.peer.principal);
    return { reply: { type: "push.unsubscribed", subscription_id: req.msg.subscription_id } };
  },
  "push.list": (ctx, req) => ({
    reply: { type: "push.subscriptions", subscriptions: ctx.push.list(req.peer.principal) },
  }),
  "push.test": async (ctx, req) => ({
    reply: await ctx.push.test(req.msg.subscription_id, req.peer.principal),
  }),
  // No reply: a hint about what the UI shows.
  presence: (ctx, req) => {
    ctx.push.setPresence(req.peer, req.msg);
    return {};
  },
};
