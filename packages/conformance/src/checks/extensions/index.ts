// The extensions' checks, one file per feature, each under the docs/protocol.md section of its feature.
import type { Check } from "../../types.js";
import { activityChecks } from "./activity.js";
import { activityPlanChecks } from "./activity-plan.js";
import { changesChecks } from "./changes.js";
import { deltaAppendChecks } from "./delta-append.js";
import { deviceChecks } from "./devices.js";
import { expiryChecks } from "./expiry.js";
import { inboxChecks } from "./inbox.js";
import { modeChecks } from "./modes.js";
import { pushChecks } from "./push.js";
import { queueChecks } from "./queue.js";
import { resumeChecks } from "./resume.js";
import { scheduleChecks } from "./schedules.js";
import { thoughtsChecks } from "./thoughts.js";
import { workspacesChecks } from "./workspaces.js";

/** Every extension's checks, in the order they run. */
export const extensionChecks: readonly Check[] = [
  ...deltaAppendChecks,
  ...scheduleChecks,
  ...expiryChecks,
  ...deviceChecks,
  ...pushChecks,
  ...resumeChecks,
  ...queueChecks,
  ...activityChecks,
  ...activityPlanChecks,
  ...thoughtsChecks,
  ...modeChecks,
  ...inboxChecks,
  ...workspacesChecks,
  ...changesChecks,
];
