import type { Logger } from "pino";
import type { AttachmentStore, SweepResult } from "./store.js";

/** How often the attachment sweep runs. */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * When the attachment sweep runs: once at start, then hourly (with `also`, other housekeeping on the
 * same beat) until {@link AttachmentSweeps.stop}. A failed hourly sweep is logged, never thrown: the
 * next one retries.
 */
export class AttachmentSweeps {
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly attachments: AttachmentStore,
    private readonly log: Logger,
    private readonly also: () => void,
  ) {}

  /** The start sweep, which also removes what a crash left: temp files and unindexed blobs. */
  atStart(): Promise<SweepResult> {
    return this.attachments.sweep(true);
  }

  /** Start the hourly sweeps (once), on a timer that never keeps the process alive. */
  schedule(): void {
    this.#timer ??= setInterval(() => this.#sweep(), SWEEP_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #sweep() {
    this.also();
    return this.attachments.sweep().catch((err: unknown) => {
      this.log.error({ err }, "attachment sweep failed");
      return { expired: 0, temps: 0, orphans: 0 };
    });
  }
}
