import { FEATURES } from "@pheby/protocol";

/**
 * The `hello.features` this server can enable: every extension of v1 that
 * `@pheby/protocol` defines (others are ignored). Order does not matter:
 * {@link negotiate} answers in the order asked.
 */
export const SERVER_FEATURES: readonly string[] = FEATURES;

/**
 * The features enabled for a hello that asked for `asked`: those this server
 * `supports` (the ones it offers), each once, in the order asked. Unknown names
 * are ignored, never an error: a client may ask a newer server's features of an older one.
 */
export function negotiate(asked: readonly string[], supports: readonly string[]): string[] {
  return asked.filter((f, i) => supports.includes(f) && asked.indexOf(f) === i);
}
