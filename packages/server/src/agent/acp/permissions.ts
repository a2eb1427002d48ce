/**
 * Maps ACP permission options to Pheby approval choices and back.
 *
 * Option IDs win over kinds: Hermes sends `allow_session` with kind `allow_always`
 * (ACP has no session-scoped kind), and its ID carries the real meaning.
 */

import type { PermissionOption } from "@agentclientprotocol/sdk";
import type { ApprovalChoice } from "@pheby/protocol";

const BY_OPTION_ID: Record<string, ApprovalChoice> = {
  allow_once: "once",
  allow_session: "session",
  allow_always: "always",
  deny: "deny",
  deny_always: "deny",
};

const BY_KIND: Record<string, ApprovalChoice> = {
  allow_once: "once",
  allow_always: "always",
  reject_once: "deny",
  reject_always: "deny",
};

/** Pheby's display order of choices. */
const ORDER: ApprovalChoice[] = ["once", "session", "always", "deny"];

/** The choices the agent offered, each bound to the first option that honours it. */
export interface PermissionMapping {
  choices: ApprovalChoice[];
  optionFor: Map<ApprovalChoice, string>;
}

/** Map the options of one `session/request_permission` to the choices Pheby may show. */
export function mapPermissionOptions(options: readonly PermissionOption[]): PermissionMapping {
  const optionFor = new Map<ApprovalChoice, string>();
  for (const option of options) {
    const choice = BY_OPTION_ID[option.optionId] ?? BY_KIND[option.kind];
    // The first option wins, so a once-scoped `deny` beats a later `deny_always`.
    if (choice && !optionFor.has(choice)) optionFor.set(choice, option.optionId);
  }
  return { choices: ORDER.filter((c) => optionFor.has(c)), optionFor };
}
