/**
 * Maps ACP permission options to Pheby approval choices and back.
 *
 * Each option gets a scope: option IDs win over kinds (Hermes sends `allow_session` with kind
 * `allow_always`, since ACP has no session-scoped kind), then the kind, and for `allow_always`
 * the name decides between a session grant and a permanent one (Gemini CLI: "Allow for this
 * session" vs "Allow this command for all future sessions"). A client may answer any of the four
 * choices; the backend applies one the agent does not offer with `nearestChoice` (docs/protocol.md).
 */

import type { PermissionOption } from "@agentclientprotocol/sdk";
import type { ApprovalChoice } from "@pheby/protocol";

/** What one option grants. `deny_always` is a deny that also sticks. */
type Scope = ApprovalChoice | "deny_always";

const BY_OPTION_ID: Record<string, Scope> = {
  allow_once: "once",
  allow_session: "session",
  allow_always: "always",
  deny: "deny",
  deny_always: "deny_always",
};

/** An `allow_always` option named like this grants for the session only… */
const SESSION_NAME = /\bsession\b/i;
/** …unless the name says it outlives it. */
const LASTING_NAME = /future|all sessions|permanent|forever/i;

function scopeOf(option: PermissionOption): Scope | null {
  const byId = BY_OPTION_ID[option.optionId];
  if (byId) return byId;
  switch (option.kind) {
    case "allow_once":
      return "once";
    case "allow_always":
      return SESSION_NAME.test(option.name) && !LASTING_NAME.test(option.name) ? "session" : "always";
    case "reject_once":
      return "deny";
    case "reject_always":
      return "deny_always";
    default:
      return null;
  }
}

/** Pheby's display order of choices. */
const ORDER: ApprovalChoice[] = ["once", "session", "always", "deny"];

/** The choices the agent offered, each bound to the option that honours it. */
export interface PermissionMapping {
  choices: ApprovalChoice[];
  optionFor: Map<ApprovalChoice, string>;
}

/** Map the options of one `session/request_permission` to the choices Pheby may show. */
export function mapPermissionOptions(options: readonly PermissionOption[]): PermissionMapping {
  // The first option of each scope wins.
  const byScope = new Map<Scope, string>();
  for (const option of options) {
    const scope = scopeOf(option);
    if (scope && !byScope.has(scope)) byScope.set(scope, option.optionId);
  }
  const optionFor = new Map<ApprovalChoice, string>();
  for (const choice of ORDER) {
    // A deny is a one-time reject where the agent has one, else its lasting reject.
    const option = byScope.get(choice) ?? (choice === "deny" ? byScope.get("deny_always") : undefined);
    if (option) optionFor.set(choice, option);
  }
  return { choices: ORDER.filter((c) => optionFor.has(c)), optionFor };
}
