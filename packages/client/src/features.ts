// Which Pheby extensions a client asks for in `hello.features`, and in what order: one list
// (`PhebyClientOptions.features`), the same names and defaults as the Kotlin client's `Features`.
import {
  FEATURE_DELTA_APPEND,
  FEATURE_DEVICES,
  FEATURE_EXPIRY,
  FEATURE_PUSH,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  FEATURE_SCHEDULES,
} from "@pheby/protocol";

/**
 * The order in which a client keeps feature names when it may send only {@link HELLO_FEATURES_MAX}:
 * first those that change what the app can show at once (whole drafts, nothing lost after a drop),
 * then the rest. Names not listed here follow, in the order asked.
 */
// lead: import from @pheby/protocol (the same order as its FEATURE_PRIORITY; helloFeatures below is its
// helloFeatureNames, HELLO_FEATURES_MAX its HELLO_FEATURES_SENT_MAX)
export const FEATURE_PRIORITY: readonly string[] = [
  FEATURE_DELTA_APPEND,
  FEATURE_RESUME,
  FEATURE_QUEUE,
  FEATURE_EXPIRY,
  FEATURE_PUSH,
  FEATURE_SCHEDULES,
  FEATURE_DEVICES,
];

/**
 * The most names a client sends in `hello.features`. A server of an older release refuses a hello
 * naming more than its own limit (16) with `unauthorized` and a final 4401 close, so a client never
 * sends an unknown server more than that.
 */
export const HELLO_FEATURES_MAX = 16;

/**
 * What {@link PhebyClientOptions.features} asks for by default: `delta.append` (either way
 * `message.delta` handlers get the whole draft), `push` (adds no events), `resume` (`seq`, replay after
 * a drop, retry-safe sends) and `queue` (`queue.changed` events). Add to it for the others:
 * `features: [...DEFAULT_FEATURES, FEATURE_SCHEDULES]`; `features: []` asks for none (plain v1).
 */
export const DEFAULT_FEATURES: readonly string[] = [
  FEATURE_DELTA_APPEND,
  FEATURE_PUSH,
  FEATURE_RESUME,
  FEATURE_QUEUE,
];

/**
 * The `hello.features` for the names asked: each once, in {@link FEATURE_PRIORITY} order (unknown
 * names after, in the order asked), at most {@link HELLO_FEATURES_MAX}.
 */
export function helloFeatures(asked: readonly string[]): string[] {
  const unique = asked.filter((f, i) => asked.indexOf(f) === i);
  const rank = (f: string) => {
    const i = FEATURE_PRIORITY.indexOf(f);
    return i === -1 ? FEATURE_PRIORITY.length : i;
  };
  // Array.prototype.sort is stable: unknown names keep the order they were asked in.
  return unique.sort((a, b) => rank(a) - rank(b)).slice(0, HELLO_FEATURES_MAX);
}
