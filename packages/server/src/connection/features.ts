/**
 * The features enabled for a hello that asked for `asked`: those this server
 * `supports` (its registered extensions), each once, in the order asked.
 * Unknown names are ignored, never an error: a client may ask a newer server's
 * features of an older one.
 */
export function negotiate(asked: readonly string[], supports: readonly string[]): string[] {
  return asked.filter((f, i) => supports.includes(f) && asked.indexOf(f) === i);
}
