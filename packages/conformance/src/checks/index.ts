import type { Check } from "../types.js";
import { attachmentChecks } from "./attachments.js";
import { conversationChecks } from "./conversations.js";
import { decisionChecks } from "./decisions.js";
import { errorChecks } from "./errors.js";
import { extensionChecks } from "./extensions/index.js";
import { handshakeChecks } from "./handshake.js";
import { runChecks } from "./runs.js";
import { settingsChecks } from "./settings.js";

/** Every check, in the order they run. */
export const CHECKS: readonly Check[] = [
  ...handshakeChecks,
  ...errorChecks,
  ...conversationChecks,
  ...runChecks,
  ...decisionChecks,
  ...settingsChecks,
  ...attachmentChecks,
  ...extensionChecks,
];
