import type { HandlerTable, ServerContext } from "./context.js";

/** The push service, which exists whenever the server offers the `push` feature. */
function push(ctx: ServerContext) {
  if (!ctx.push) throw new Error("push handlers called without a push service");
  return ctx.push;
}

/**
 * The `push` extension's requests (a peer that did not enable it gets `unknown_type`). A
 * subscription records the credential that created it; the owner sees and removes them all.
 */
export const pushHandlers: HandlerTable = {
  "push.subscribe": async (ctx, req) => ({
    reply: {
      type: "push.subscribed",
      subscription_id: await push(ctx).subscribe(req.msg, req.peer.principal),
    },
  }),
  "push.unsubscribe": (ctx, req) => {
    push(ctx).unsubscribe(req.msg.subscription_id, req.peer.principal);
    return { reply: { type: "push.unsubscribed", subscription_id: req.msg.subscription_id } };
  },
  "push.list": (ctx, req) => ({
    reply: { type: "push.subscriptions", subscriptions: push(ctx).list(req.peer.principal) },
  }),
  "push.test": async (ctx, req) => ({
    reply: await push(ctx).test(req.msg.subscription_id, req.peer.principal),
  }),
  // No reply: a hint about what the UI shows.
  presence: (ctx, req) => {
    push(ctx).setPresence(req.peer, req.msg);
    return {};
  },
};
