/**
 * One prompt turn: wait out a cancelled turn still stopping, open the session
 * in the live process (or continue the conversation in a new session when the
 * old one is lost), apply the turn's settings, send `session/prompt`, and turn
 * its cancel into `session/cancel` (giving up a turn that does not stop in
 * time). Files the agent delivers by path are root-checked here before they
 * reach the sink.
 */

import * as acp from "@agentclientprotocol/sdk";
import { ToolDetailBuilder } from "../../activity/tool-detail.js";
import type { TurnInput, TurnResult, TurnSink } from "../port.js";
import { type FoundFile, promptBlocks } from "./content.js";
import { type AgentProcess, agentErrorText, errorMessage } from "./process.js";
import { CONTEXT_BUDGET_CHARS, contextBlock, isLostSession, SESSION_REPLACED_NOTICE } from "./replacement.js";
import { applySettings } from "./session-settings.js";
import { newSession, open, takeSpare } from "./sessions.js";
import type { AcpState, SessionState } from "./state.js";
import { drain } from "./state.js";
import type { Supervisor } from "./supervisor.js";
import { Turn } from "./turn.js";
import { flushUnsolicited } from "./updates.js";

/**
 * After `session/cancel`, how long a turn may take to stop before it is given up (default of
 * `cancelTimeoutMs`). With the server's 5 s cancel grace, the next message of the conversation
 * starts at most about this long after the cancel, whatever the agent does.
 */
export const DEFAULT_CANCEL_TIMEOUT_MS = 5_000;

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
  const first = state.session(input.sessionId, input.cwd);
  // The server may report a cancelled run finished before the agent has stopped it (its cancel
  // grace): wait until the agent stops it or it is given up (cancelTimeoutMs after the cancel).
  while (first.turn && !first.turn.isReleased) {
    if (!first.turn.cancelled)
      return { status: "failed", error: "a turn is already running in this session" };
    await Promise.race([first.turnEnded, first.turn.released]);
  }
  if (signal.aborted) return { status: "cancelled" };
  // Only now: an agent restarted under a given-up turn is respawned here.
  let proc: AgentProcess;
  try {
    proc = await supervisor.process();
  } catch (err) {
    return { status: "failed", error: state.paths.scrub(errorMessage(err)) };
  }
  flushUnsolicited(state, first);
  const turn = new Turn(
    sink,
    (file) => deliver(state, sink, file),
    (text, max) => state.paths.clientText(text, max),
    new ToolDetailBuilder({
      cwd: state.cwdOf(first),
      base: state.pathBases.of(state.cwdOf(first)),
      scrub: (text) => state.paths.scrub(text),
    }),
  );
  supervisor.track(turn, proc);
  // A session a given-up turn still holds is lost to the conversation: the turn runs in a new one.
  const seat = new Seat(turn, first.turn ? null : first);
  try {
    const result = await runTurn(state, supervisor, proc, first, seat, input, signal);
    if (seat.session) await drain(seat.session);
    await turn.finish(result);
    return result;
  } finally {
    seat.leave();
    supervisor.untrack(turn);
  }
}

/** Where a turn runs: the session whose updates, questions and files are the turn's. */
class Seat {
  #ended: (() => void) | null = null;
  session: SessionState | null = null;

  constructor(
    readonly turn: Turn,
    session: SessionState | null,
  ) {
    if (session) this.take(session);
  }

  take(session: SessionState): void {
    this.leave();
    this.session = session;
    session.turn = this.turn;
    session.turnEnded = new Promise((resolve) => (this.#ended = resolve));
  }

  leave(): void {
    if (this.session?.turn === this.turn) this.session.turn = null;
    this.#ended?.();
    this.#ended = null;
  }
}

async function runTurn(
  state: AcpState,
  supervisor: Supervisor,
  proc: AgentProcess,
  first: SessionState,
  seat: Seat,
  input: TurnInput,
  signal: AbortSignal,
): Promise<TurnResult> {
  const { turn } = seat;
  let session = first;
  let context: string | null = null;
  let replaced = false;
  /** Continue the conversation in a new session, with its history as context. */
  const replace = async (why: string) => {
    session =
      takeSpare(state, proc, state.cwdOf(first)) ?? (await newSession(state, proc, state.cwdOf(first)));
    seat.take(session);
    replaced = true;
    if (!first.turn) state.sessions.delete(first.id);
    turn.sink.sessionReplaced(session.id);
    context = contextBlock(input.history?.(CONTEXT_BUDGET_CHARS), CONTEXT_BUDGET_CHARS);
    // A conversation where nothing was said yet lost nothing: no notice.
    if (context) turn.sink.notice(SESSION_REPLACED_NOTICE);
    state.host.log.info({ from: first.id, to: session.id, why }, "agent session replaced");
  };

  let cancelTimer: NodeJS.Timeout | undefined;
  const ms = state.options.cancelTimeoutMs ?? DEFAULT_CANCEL_TIMEOUT_MS;
  const onAbort = () => {
    turn.cancelled = true;
    turn.withdrawAll();
    proc.notify("session/cancel", { sessionId: session.id });
    cancelTimer = setTimeout(() => {
      // Given up. One process serves every conversation: it is restarted (which ends this turn)
      // only once no other turn runs in it; until then the conversation goes on without this session.
      turn.abandoned = true;
      if (!supervisor.retire(proc, `the agent did not stop within ${ms} ms of a cancel`)) turn.release();
    }, ms);
  };
  // From the start: a cancel while the session is still being opened (a slow session/load) must not
  // leave a turn that no later prompt may wait for.
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    if (seat.session === null) await replace("a turn that ignored its cancel still holds the session");
    else {
      try {
        await open(state, proc, session);
      } catch (err) {
        if (!isLostSession(err)) throw err;
        await replace(`the agent could not reopen it: ${errorMessage(err)}`);
      }
    }
    await applySettings(state, proc, session, input.settings, turn.sink);
    if (signal.aborted) return { status: "cancelled" };
    const blocks = await promptBlocks(
      input.text,
      input.attachments,
      proc.init.agentCapabilities?.promptCapabilities,
    );
    let response: acp.PromptResponse;
    for (;;) {
      try {
        const withContext: acp.ContentBlock[] = context
          ? [{ type: "text", text: context }, ...blocks]
          : blocks;
        response = await proc.request<acp.PromptResponse>(
          "session/prompt",
          { sessionId: session.id, prompt: withContext, ...(input.meta ? { _meta: input.meta } : {}) },
          null,
        );
        break;
      } catch (err) {
        // The agent lost the session while it ran (it answers that it does not know it): once.
        if (replaced || turn.cancelled || !isLostSession(err)) throw err;
        await replace(`the agent no longer knows it: ${errorMessage(err)}`);
        await applySettings(state, proc, session, input.settings, turn.sink);
      }
    }
    if (turn.cancelled) return { status: "cancelled" };
    supervisor.healthy();
    return stopResult(response.stopReason);
  } catch (err) {
    if (turn.cancelled || signal.aborted) return { status: "cancelled" };
    if (err instanceof acp.RequestError)
      return { status: "failed", error: `the agent reported an error: ${agentErrorText(err, state.paths)}` };
    return { status: "failed", error: state.paths.scrub(errorMessage(err)) };
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
