/**
 * Maps ACP permission options to Pheby approval choices and back.
 *
 * Each option gets a scope: option IDs win over kinds (Hermes sends `allow_session` with kind
 * `allow_always`, since ACP has no session-scoped kind), then the kind, and for `allow_always`
 * the name decides between a session grant and a permanent one (Gemini CLI: "Allow for this
 * session" vs "Allow this command for all future sessions"). A client may answer any of the four
 * choices; one the agent does not offer goes to the nearest option it does offer (docs/agents.md).
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

/** For each choice, the scopes that may honour it, nearest first. */
const NEAREST: Record<ApprovalChoice, Scope[]> = {
  once: ["once", "session", "always"],
  session: ["session", "once", "always"],
  always: ["always", "session", "once"],
  deny: ["deny", "deny_always"],
};

/** Pheby's display order of choices. */
const ORDER: ApprovalChoice[] = ["once", "session", "always", "deny"];

/** The choices the agent offered, and for every choice the option that honours it best. */
export interface PermissionMapping {
  /** Choices the agent offers as such (what the client is shown). */
  choices: ApprovalChoice[];
  /** Every choice the agent can honour at all → its option ID (nearest when not offered as such). */
  optionFor: Map<ApprovalChoice, string>;
}

/** Map the options of one `session/request_permission` to the choices Pheby may show and accept. */
export function mapPermissionOptions(options: readonly PermissionOption[]): PermissionMapping {
  // The first option of each scope wins.
  const byScope = new Map<Scope, string>();
  for (const option of options) {
    const scope = scopeOf(option);
    if (scope && !byScope.has(scope)) byScope.set(scope, option.optionId);
  }
  const optionFor = new Map<ApprovalChoice, string>();
  for (const choice of ORDER) {
    const scope = NEAREST[choice].find((s) => byScope.has(s));
    if (scope) optionFor.set(choice, byScope.get(scope)!);
  }
  const offered = (c: ApprovalChoice) => byScope.has(c) || (c === "deny" && byScope.has("deny_always"));
  return { choices: ORDER.filter(offered), optionFor };
}
