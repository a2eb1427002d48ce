import type { ServerMessage, ServerMessageOf } from "@pheby/protocol";
import type { LoggedEvent } from "../store/resume-log.js";

/**
 * What a restart did to a run that was active when the server stopped (a
 * crash, a `kill -9`), as the events a connected client would have seen had
 * it happened live, in the run engine's order: the questions still pending
 * are withdrawn, the tools still running are cancelled, the message is
 * completed with the draft streamed so far, and the run finishes `failed`.
 * Derived from the conversation's resume log (`held`), since pending questions
 * and drafts lived only in the stopped process's memory. Appending these to
 * the log lets a client that resumes after the restart learn all of it.
 * Nothing is returned for a run the log shows finished.
 */
export function interruptedRunEvents(
  held: readonly LoggedEvent[],
  run: { conversationId: string; runId: string },
  error: string,
  ts: string,
): ServerMessage[] {
  const { conversationId, runId } = run;
  const approvals = new Set<string>();
  const clarifications = new Set<string>();
  const tools = new Map<string, ServerMessageOf<"tool.event">>();
  let messageId = `draft-${runId}`;
  let draft = "";
  for (const { event } of held) {
    switch (event.type) {
      case "run.finished":
        if (event.run_id === runId) return [];
        break;
      case "message.start":
        if (event.run_id === runId) messageId = event.message_id;
        break;
      case "message.delta":
        if (event.message_id === messageId) draft = event.text;
        break;
      case "tool.event":
        if (event.run_id === runId) tools.set(event.tool_call_id, event);
        break;
      // A question outside any run (run_id null) lived in memory too: it is gone as well.
      case "approval.request":
        if (event.run_id === runId || event.run_id === null) approvals.add(event.approval_id);
        break;
      case "approval.resolved":
        approvals.delete(event.approval_id);
        break;
      case "clarify.request":
        if (event.run_id === runId || event.run_id === null) clarifications.add(event.clarify_id);
        break;
      case "clarify.resolved":
        clarifications.delete(event.clarify_id);
        break;
    }
  }
  const events: ServerMessage[] = [];
  for (const approval_id of approvals) {
    events.push({ type: "approval.resolved", approval_id, choice: "deny", accepted: false });
  }
  for (const clarify_id of clarifications) {
    events.push({ type: "clarify.resolved", clarify_id, accepted: false });
  }
  for (const tool of tools.values()) {
    if (tool.status !== "running") continue;
    events.push({
      type: "tool.event",
      conversation_id: conversationId,
      run_id: runId,
      tool_call_id: tool.tool_call_id,
      tool_name: tool.tool_name,
      status: "cancelled",
      duration_ms: null,
      ts,
    });
  }
  events.push(
    { type: "message.complete", conversation_id: conversationId, message_id: messageId, text: draft, ts },
    { type: "run.finished", conversation_id: conversationId, run_id: runId, status: "failed", error },
  );
  return events;
}
