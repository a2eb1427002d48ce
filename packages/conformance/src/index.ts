/**
 * `@pheby/conformance`: a black-box conformance suite for Pheby Protocol v1.
 * Point it at any Pheby server (ours, the original Python plugin, a mock) and
 * it reports, check by check, whether the server implements the spec, with the
 * spec section and the offending frame for every failure. Every frame the
 * server sends is validated against `@pheby/protocol`.
 *
 * @packageDocumentation
 */
export {
  conformanceForNodeTest,
  conformanceForVitest,
  type NodeTestApi,
  type VitestApi,
} from "./adapters.js";
export { CHECKS } from "./checks/index.js";
export { serverUrls } from "./context.js";
export { formatReport, formatResult } from "./format.js";
export { toJUnit } from "./junit.js";
export {
  type Answer as PushReceiverAnswer,
  type PushReceiver,
  type ReceivedPush,
  type ReceiverEndpoint,
  startReceiver as startPushReceiver,
} from "./push-receiver.js";
export { matchesPattern, runCheck, runConformance, selectChecks } from "./runner.js";
export type { Check, CheckResult, CheckStatus, ConformanceOptions, ConformanceReport } from "./types.js";
