/**
 * One prompt turn: wait out a cancelled turn still stopping, reopen the
 * session in the live process, apply the turn's settings, send
 * `session/prompt`, and turn its cancel into `session/cancel` (killing an
 * agent that does not stop in time). Files the agent delivers by path are
 * root-checked here before they reach the sink.
 */
import * as acp from "@agentclientprotocol/sdk";
import type { TurnInput, TurnResult, TurnSink } from "../port.js";
import { type FoundFile, promptBlocks } from "./content.js";
import { type AgentProcess, agentErrorText, errorMessage } from "./process.js";
import { applySettings } from "./session-settings.js";
import { open } from "./sessions.js";
import type { AcpState, SessionState } from "./state.js";
import { drain } from "./state.js";
import type { Supervisor } from "./supervisor.js";
import { Turn } from "./turn.js";
import { flushUnsolicited } from "./updates.js";

/** Run one turn (the backend's `prompt`). */
export async function prompt(
  state: AcpState,
  supervisor: Supervisor,
  input: TurnInput,
  sink: TurnSink,
  signal: AbortSignal,
): Promise<TurnResult> {
  if (signal.aborted) return { status: "cancelled" };
  if (state.deleted.has(input.sessionId)) {
    return { status: "failed", error: "this conversation's agent session was deleted" };
  }
  const session = state.session(input.sessionId);
  // The server may report a cancelled run finished before the agent has stopped it (its cancel grace);
  // the next prompt then waits for the agent, which stops or is killed within cancelTimeoutMs.
  while (session.turn) {
    if (!session.turn.cancelled)
      return { status: "failed", error: "a turn is already running in this session" };
    await session.turnEnded;
  }
  if (signal.aborted) return { status: "cancelled" };
  // Only now: an agent killed for ignoring that cancel is respawned here.
  let proc: AgentProcess;
  try {
    proc = await supervisor.process();
  } catch (err) {
    return { status: "failed", error: errorMessage(err) };
  }
  flushUnsolicited(state, session);
  const turn = new Turn(sink, (file) => deliver(state, sink, file));
  session.turn = turn;
  let ended!: () => void;
  session.turnEnded = new Promise((resolve) => (ended = resolve));
  try {
    const result = await runTurn(state, supervisor, proc, session, turn, input, signal);
    await drain(session);
    await turn.finish(result);
    return result;
  } finally {
    session.turn = null;
    ended();
  }
}

async function runTurn(
  state: AcpState,
  supervisor: Supervisor,
  proc: AgentProcess,
  session: SessionState,
  turn: Turn,
  input: TurnInput,
  signal: AbortSignal,
): Promise<TurnResult> {
  let cancelTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    turn.cancelled = true;
    turn.withdrawAll();
    proc.notify("session/cancel", { sessionId: session.id });
    const ms = state.options.cancelTimeoutMs ?? state.requestTimeoutMs;
    cancelTimer = setTimeout(() => proc.kill(`the agent did not stop within ${ms} ms of a cancel`), ms);
  };
  try {
    await open(state, proc, session);
    await applySettings(state, proc, session, input.settings, turn.sink);
    if (signal.aborted) return { status: "cancelled" };
    const blocks = await promptBlocks(
      input.text,
      input.attachments,
      proc.init.agentCapabilities?.promptCapabilities,
    );
    signal.addEventListener("abort", onAbort, { once: true });
    const response = await proc.request<acp.PromptResponse>(
      "session/prompt",
      { sessionId: session.id, prompt: blocks, ...(input.meta ? { _meta: input.meta } : {}) },
      null,
    );
    if (turn.cancelled) return { status: "cancelled" };
    supervisor.healthy();
    return stopResult(response.stopReason);
  } catch (err) {
    if (turn.cancelled || signal.aborted) return { status: "cancelled" };
    if (err instanceof acp.RequestError)
      return { status: "failed", error: `the agent reported an error: ${agentErrorText(err)}` };
    return { status: "failed", error: errorMessage(err) };
  } finally {
    signal.removeEventListener("abort", onAbort);
    clearTimeout(cancelTimer);
  }
}

/** Store a file the agent produced; host paths only from the allowed roots. */
async function deliver(state: AcpState, sink: TurnSink, file: FoundFile): Promise<void> {
  if (file.source === "bytes") return sink.file(file);
  const real = await state.roots.resolve(file.path);
  if (!real) {
    state.host.log.warn({ path: file.path }, "refused an agent file outside the allowed roots");
    return;
  }
  await sink.file({ ...file, path: real });
}

function stopResult(reason: acp.StopReason): TurnResult {
  switch (reason) {
    case "end_turn":
    case "max_tokens":
    case "max_turn_requests":
      return { status: "completed" };
    case "cancelled":
      return { status: "cancelled" };
    case "refusal":
      return { status: "failed", error: "the agent refused to continue" };
    default:
      return { status: "failed", error: `the agent stopped for an unknown reason (${String(reason)})` };
  }
}
