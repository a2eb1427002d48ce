// The check that the server enabled an extension before a command relies on it: a server that did not
// would answer its requests with unknown_type, or ignore its fields (a v1 list, a conversation in the
// default place), which would mislead more than an error.
import { type PhebyClient, PhebyError } from "@pheby/client";

/** Throws `unknown_type` unless the server enabled `feature` on this connection (`what` names the flag or command). */
export function requireFeature(client: PhebyClient, feature: string, what: string): void {
  if (!client.features.includes(feature))
    throw new PhebyError(
      "unknown_type",
      `${what} needs the server's ${feature} extension, which it did not enable`,
    );
}
