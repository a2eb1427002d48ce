// Compile-time checks of `PhebyClient.request`'s reply types (`pnpm typecheck` fails if one breaks):
// a request that may be answered two ways is typed with both, every other with its one reply.
import type { PhebyClient } from "../src/index.js";

export async function replyTypes(c: PhebyClient, id: string, maybe: boolean, since: number | undefined) {
  // @ts-expect-error a spread that may add queue: true may be queued too
  const spread: "run.accepted" = (
    await c.request({ type: "chat.send", conversation_id: id, text: "x", ...(maybe ? { queue: true } : {}) })
  ).type;
  const open: "conversation.history" = (await c.request({ type: "conversation.open", conversation_id: id }))
    .type;
  const send: "run.accepted" = (await c.request({ type: "chat.send", conversation_id: id, text: "x" })).type;
  const notQueued: "run.accepted" = (
    await c.request({ type: "chat.send", conversation_id: id, text: "x", queue: false })
  ).type;
  // @ts-expect-error a send with queue: true may be queued
  const queued: "run.accepted" = (
    await c.request({ type: "chat.send", conversation_id: id, text: "x", queue: true })
  ).type;
  // @ts-expect-error so may one whose queue is only known at run time
  const dynamic: "run.accepted" = (
    await c.request({ type: "chat.send", conversation_id: id, text: "x", queue: maybe })
  ).type;
  // @ts-expect-error an open with since_seq may be resumed
  const resumed: "conversation.history" = (
    await c.request({ type: "conversation.open", conversation_id: id, since_seq: 3 })
  ).type;
  // @ts-expect-error also when since_seq may be undefined at run time
  const perhaps: "conversation.history" = (
    await c.request({ type: "conversation.open", conversation_id: id, since_seq: since })
  ).type;
  const pong: "pong" = (await c.request({ type: "ping" })).type;
  return [open, send, notQueued, queued, dynamic, resumed, perhaps, pong, spread];
}
