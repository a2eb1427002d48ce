/** Thrown by a check that found a violation; `frame` is the offending server frame, if any. */
export class CheckFailure extends Error {
  override readonly name = "CheckFailure";
  constructor(
    message: string,
    readonly frame?: unknown,
  ) {
    super(message);
  }
}

/** Thrown by a check that cannot run against this server (e.g. it needs the simulator). */
export class CheckSkip extends Error {
  override readonly name = "CheckSkip";
}

/** Fail the current check unless `condition` holds. */
export function expect(condition: unknown, message: string, frame?: unknown): asserts condition {
  if (!condition) throw new CheckFailure(message, frame);
}
