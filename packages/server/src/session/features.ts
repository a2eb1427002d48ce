import {
  FEATURE_DELTA_APPEND,
  FEATURE_DEVICES,
  FEATURE_EXPIRY,
  FEATURE_PUSH,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  FEATURE_SCHEDULES,
} from "@pheby/protocol";

/** The `hello.features` this server can enable (Pheby extensions of v1; others are ignored). */
export const SERVER_FEATURES: readonly string[] = [
  FEATURE_DELTA_APPEND,
  FEATURE_DEVICES,
  FEATURE_PUSH,
  FEATURE_RESUME,
  FEATURE_QUEUE,
  FEATURE_SCHEDULES,
  FEATURE_EXPIRY,
];

/**
 * The features enabled for a hello that asked for `asked`: those this server
 * `supports` (default all it can), each once, in the order asked. Unknown names
 * are ignored, never an error: a client may ask a newer server's features of an older one.
 */
export function negotiate(asked: readonly string[], supports: readonly string[] = SERVER_FEATURES): string[] {
  return asked.filter((f, i) => supports.includes(f) && asked.indexOf(f) === i);
}
