/**
 * `@pheby/testkit`: what a test of a Pheby Protocol v1 server needs on the wire. {@link Probe} is a
 * raw connection that sends anything, validates every frame the server sends against
 * `@pheby/protocol` (and, once `ready` arrived, against the features it enabled) and waits for
 * frames by predicate; {@link runFrames} and {@link Probe.run} follow a run to its end by what its
 * `message.start` names. The conformance suite, the server's tests and its reliability suite all
 * drive servers through it.
 *
 * @packageDocumentation
 */

export { fixtureGit } from "./git.js";
export {
  type CloseInfo,
  type ConnectOptions,
  describe as describeFrame,
  type InvalidFrame,
  Probe,
  ProbeError,
  type ProbeOptions,
  type ProbeSocket,
  type ReadyMessage,
} from "./probe.js";
export { answerOf, messageIdOf, runFrames } from "./run.js";
