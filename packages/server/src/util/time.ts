/** The injectable clock of the server (milliseconds since the epoch). */
export interface Clock {
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** ISO-8601 UTC timestamp of a clock reading, as every `ts` field carries it. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
