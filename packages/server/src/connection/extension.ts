import type { ClientMessageOf, ServerMessage } from "@pheby/protocol";
import type { Principal } from "../auth/principal.js";
import type { Peer } from "../outbox/outbox.js";

/** What a hello's extension credential authenticates: a principal, and fields for its `ready`. */
export type Redeemed =
  | { principal: Principal; ready?: Readonly<Record<string, unknown>> }
  | { refused: string };

/**
 * A credential an extension accepts in a hello instead of the secret (`devices`: a pairing code).
 * The connection layer checks the version before redeeming it, so a hello with a wrong version
 * never spends a one-time credential; a refusal is `unauthorized` (its message), counts towards the
 * lockout like a wrong secret and closes 4401.
 */
export interface HelloCredential {
  /** Whether the hello carries this credential (then it is redeemed, not the secret compared). */
  presented(hello: ClientMessageOf<"hello">): boolean;
  /** Who it authenticates, or why not. */
  redeem(hello: ClientMessageOf<"hello">): Redeemed;
}

/**
 * One extension as the connection layer sees it: the feature a hello may enable, and its hooks into
 * the handshake and the connection's life. The composition root registers the server's extensions
 * (`extensions/`); the connection layer knows none of them by name, so a new extension adds a
 * registration instead of an import here. Every hook but `credential` runs only for a connection
 * that enabled `feature`, each in the order the extensions are registered.
 */
export interface ConnectionExtension {
  /** The `hello.features` name it answers to (one of `@pheby/protocol`'s FEATURES). */
  readonly feature: string;
  /** A credential a hello may carry instead of the secret (while the server offers this feature). */
  readonly credential?: HelloCredential;
  /** Fields it adds to `ready`, after `features` and before `ts` (`push`: the VAPID key). */
  ready?(connection: Peer): Readonly<Record<string, unknown>> | undefined;
  /** The first frames it sends, right after `ready`, to this connection alone (without `request_id`). */
  afterReady?(connection: Peer): readonly ServerMessage[];
  /** Fields it adds to a direct ("requester") reply, after its `request_id` (`resume`: `seq`). */
  replyFields?(connection: Peer, reply: ServerMessage): Readonly<Record<string, unknown>> | undefined;
  /** The connection ended (after it left the Fanout). */
  closed?(connection: Peer): void;
}
