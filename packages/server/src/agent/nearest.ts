import type { ApprovalChoice } from "@pheby/protocol";

/**
 * For each choice a client may send, the choices that honour it, nearest first.
 * An approval is narrowed before it is widened (`always` → `session` → `once`);
 * a deny is only ever a deny.
 */
const NEAREST: Record<ApprovalChoice, readonly ApprovalChoice[]> = {
  once: ["once", "session", "always"],
  session: ["session", "once", "always"],
  always: ["always", "session", "once"],
  deny: ["deny"],
};

/**
 * The choice a backend applies when a client answered `choice` and the agent
 * offers only `offered`: `choice` itself when offered, else the nearest offered
 * one (see docs/protocol.md, "Choices the agent does not offer"). `undefined`
 * when nothing fits (a deny to an agent without a reject option): answer the
 * agent "cancelled", which fails the action closed.
 */
export function nearestChoice(
  choice: ApprovalChoice,
  offered: readonly ApprovalChoice[],
): ApprovalChoice | undefined {
  return NEAREST[choice].find((c) => offered.includes(c));
}
