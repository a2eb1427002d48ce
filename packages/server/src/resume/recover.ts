import type { ServerMessage } from "@pheby/protocol";
import type { Store } from "../store/store.js";
import { iso } from "../util/time.js";
import { interruptedRunEvents } from "./restart.js";

/**
 * At start: the runs the last process left `running` (a crash, a `kill -9`)
 * are recorded `failed`, with the draft their resume log shows as their answer
 * (as a failed run's partial text always is), and what that did is appended
 * to each conversation's log, past the seqs a power loss may have lost, so a
 * client that resumes learns it (unless `resume` is off: then nothing is logged).
 * Returns how many runs it ended.
 */
export function recoverInterruptedRuns(store: Store, now: number, error: string, resume = true): number {
  const closing: { conversationId: string; events: ServerMessage[] }[] = [];
  const runs = store.failInterruptedRuns(now, error, (run) => {
    const conversationId = run.conversation_id;
    store.resumeLog.skipLost(conversationId);
    const events = interruptedRunEvents(
      store.resumeLog.held(conversationId),
      { conversationId, runId: run.run_id },
      error,
      iso(now),
    );
    closing.push({ conversationId, events });
    const complete = events.find((e) => e.type === "message.complete");
    return complete?.type === "message.complete" ? complete.text : "";
  });
  if (resume) {
    for (const { conversationId, events } of closing) {
      for (const event of events) store.resumeLog.append(conversationId, event);
    }
  }
  return runs.length;
}
