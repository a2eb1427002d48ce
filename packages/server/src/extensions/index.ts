import {
  FEATURE_ACTIVITY,
  FEATURE_CHANGES,
  FEATURE_DELTA_APPEND,
  FEATURE_EXPIRY,
  FEATURE_MODES,
  FEATURE_QUEUE,
  FEATURE_SCHEDULES,
  FEATURE_THOUGHTS,
} from "@pheby/protocol";
import type { ConnectionExtension } from "../connection/extension.js";
import type { ServerContext } from "../handlers/context.js";
import { devicesExtension } from "./devices.js";
import { inboxExtension } from "./inbox.js";
import { pushExtension } from "./push.js";
import { resumeExtension } from "./resume.js";
import { workspacesExtension } from "./workspaces.js";

/**
 * The extensions this server offers a hello, in `FEATURES`' order, each with its hooks into a
 * connection (the others change only what handlers and the Fanout do). `resume` is registered only
 * when the server keeps a resume log (`resume: false` leaves it out of every `ready`). A new
 * extension is one more entry here; the connection layer imports none of them.
 */
export function connectionExtensions(ctx: ServerContext): ConnectionExtension[] {
  return [
    { feature: FEATURE_DELTA_APPEND },
    pushExtension(ctx.push),
    ...(ctx.resume ? [resumeExtension(ctx.resume)] : []),
    { feature: FEATURE_QUEUE },
    { feature: FEATURE_SCHEDULES },
    { feature: FEATURE_EXPIRY },
    devicesExtension(ctx.devices),
    { feature: FEATURE_ACTIVITY },
    { feature: FEATURE_MODES },
    { feature: FEATURE_THOUGHTS },
    inboxExtension(ctx),
    workspacesExtension(ctx),
    { feature: FEATURE_CHANGES },
  ];
}
