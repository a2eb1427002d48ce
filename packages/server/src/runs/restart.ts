import type { Logger } from "pino";
import { recoverInterruptedRuns } from "../resume/recover.js";
import { forgetRevokedDevices } from "../store/creators.js";
import type { Store } from "../store/store.js";

/**
 * What a start clears up after the last process, before anything is connected, each step logged:
 * runs it left `running` are recorded failed, and what that did is logged to the resume log (unless
 * `resume` is off), so a client that resumes after the restart learns it; then what devices revoked
 * while the server was down (`devices revoke-all`) set in motion goes.
 */
export function recoverAtStart(store: Store, now: number, resume: boolean, log: Logger): void {
  const interrupted = recoverInterruptedRuns(store, now, "The server stopped during this run", resume);
  if (interrupted > 0)
    log.info({ runs: interrupted }, "runs interrupted by the last shutdown recorded as failed");
  const forgotten = forgetRevokedDevices(store.db);
  if (forgotten.schedules + forgotten.queuedRuns + forgotten.yolo + forgotten.modes > 0)
    log.info(forgotten, "work of revoked devices removed");
}
