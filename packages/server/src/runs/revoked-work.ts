import type { Logger } from "pino";
import { eventOf, type Outbox } from "../outbox/outbox.js";
import type { Scheduler } from "../schedules/scheduler.js";
import type { Modes } from "../settings/modes.js";
import type { Settings } from "../settings/settings.js";
import type { RunEngine } from "./engine.js";
import type { RunQueue } from "./queue.js";

/** What {@link stopRevokedWork} acts through. */
export interface RevokedWorkDeps {
  queue: RunQueue;
  scheduler: Scheduler;
  runs: RunEngine;
  settings: Settings;
  modes: Modes;
  outbox: Outbox;
  log: Logger;
}

/**
 * A device was revoked: nothing it set in motion may go on. Its queued runs leave their queues
 * (`queue.changed`), its schedules are deleted (`schedule.changed`, `deleted: true`), the YOLO it
 * switched on is switched off (`yolo.changed`), its choice of a mode that approves without asking is
 * undone (`mode.changed`, also when YOLO's mode goes), and its active runs are cancelled
 * (`run.finished` `cancelled`). The queue goes first, so a cancelled run starts none of the device's
 * follow-ups, and YOLO and modes before the cancel, so the run that starts next is not auto-approved
 * on the device's word.
 */
export function stopRevokedWork(deviceId: string, deps: RevokedWorkDeps): void {
  const queued = deps.queue.dropDevice(deviceId);
  const schedules = deps.scheduler.deleteForDevice(deviceId).length;
  const yolo = deps.settings.revokeYolo(deviceId);
  for (const conversation_id of yolo) {
    deps.outbox.publish(
      eventOf({ type: "yolo.changed", enabled: false, scope: "conversation", conversation_id }),
    );
  }
  const modes = deps.modes.revoke(deviceId, yolo);
  const runs = deps.runs.cancelDevice(deviceId);
  deps.log.info(
    { device: deviceId, queued, schedules, yolo: yolo.length, modes, runs },
    "revoked device's work stopped",
  );
}
