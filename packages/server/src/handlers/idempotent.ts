import type { ServerMessage } from "@pheby/protocol";
import { deviceIdOf } from "../auth/principal.js";
import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import { OWNER_SENDER, type SentKey } from "../store/sent-requests.js";
import type { Answer, ServerContext } from "./context.js";

/** A request handled: the reply a retry would get again, and the answer of this first try. */
export interface Handled {
  reply: ServerMessage;
  answer: Answer;
}

/**
 * Handle a request that may carry a `client_message_id` (`resume`): without
 * one (`key` undefined), just `handle` it; with one, at most once per 24
 * hours. A repeat is answered with the first try's reply, to its own
 * connection only (no broadcast), or refused with the first try's permanent
 * error. Checked before anything else the request does.
 */
export async function once(
  ctx: ServerContext,
  peer: Peer,
  key: SentKey | undefined,
  handle: () => Promise<Handled>,
): Promise<Answer> {
  if (key === undefined) return (await handle()).answer;
  let first: Answer | undefined;
  const sender = deviceIdOf(peer.principal) ?? OWNER_SENDER;
  const settled = await ctx.sends.once(key, sender, async () => {
    const handled = await handle();
    first = handled.answer;
    return handled.reply;
  });
  if ("error" in settled) throw new ProtocolError(settled.error.code, settled.error.message);
  return first ?? { rule: "requester", reply: settled.reply };
}
