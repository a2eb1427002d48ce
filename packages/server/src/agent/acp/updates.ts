/**
 * `session/update` notifications, agent → client: applied to the session's
 * running turn, to its replay while `session/load` runs, or, outside any
 * turn, pushed to the host as unsolicited output.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { AgentCommandInfo, AgentModes } from "../port.js";
import { stripMediaLines } from "./content.js";
import { HERMES_NOTIFICATION_IDS_META, parseHermesNotification } from "./hermes.js";
import { errorMessage } from "./process.js";
import { modesOf, setSettings, withDefault } from "./session-settings.js";
import type { AcpState, SessionState } from "./state.js";

/** Queue an update behind the session's earlier ones (the SDK dispatches handlers concurrently). */
export function enqueue(state: AcpState, n: acp.SessionNotification): void {
  const session = state.session(n.sessionId);
  session.queue = session.queue
    .then(() => apply(state, session, n.update))
    .catch((err) => state.host.log.error({ err: errorMessage(err) }, "failed to apply an agent update"));
}

async function apply(state: AcpState, session: SessionState, update: acp.SessionUpdate): Promise<void> {
  if (session.replay) return replayed(session, update);
  const turn = session.turn;
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
      if (turn) await turn.message(update.content);
      else if (update.content.type === "text") unsolicited(state, session, update.content.text);
      return;
    case "agent_thought_chunk":
      // Thinking outside a turn has no run to belong to: dropped.
      turn?.thought(update.content);
      return;
    case "tool_call":
    case "tool_call_update":
      await turn?.tool(update);
      return;
    case "plan": {
      // Plan steps name files as the model does ("Fix /srv/work/app.ts"): the server's paths go.
      const entries = update.entries.map((e) =>
        typeof e.content === "string" ? { ...e, content: state.paths.scrub(e.content) } : e,
      );
      if (turn) turn.sink.plan(entries);
      else state.host.plan?.(session.id, entries);
      return;
    }
    case "usage_update": {
      const usage = { used: update.used, size: update.size, cost: update.cost ?? null };
      if (turn) turn.sink.usage(usage);
      else state.host.usage?.(session.id, usage);
      return;
    }
    case "session_info_update":
      if (typeof update.title === "string" && update.title.trim())
        state.host.sessionTitle(session.id, update.title.trim());
      return;
    case "config_option_update": {
      const before = modesOf(session);
      setSettings(state, session, { ...session.settings, configOptions: update.configOptions });
      if (!session.modes) modesUpdated(state, session, before);
      return;
    }
    case "current_mode_update": {
      if (!session.modes) return;
      const before = session.modes.currentModeId;
      session.modes.currentModeId = update.currentModeId;
      if (update.currentModeId !== before && update.currentModeId !== session.switchingTo)
        state.host.modeChanged?.(session.id, update.currentModeId);
      return;
    }
    case "available_commands_update":
      session.commands = update.availableCommands.map(
        (c): AgentCommandInfo => ({
          name: c.name,
          description: c.description ?? "",
          hint: c.input && typeof c.input.hint === "string" ? c.input.hint : null,
        }),
      );
      state.host.sessionCommands?.(session.id, session.commands);
      return;
    case "compaction_update":
      if (update.status === "completed") state.host.compacted?.(session.id);
      return;
    case "notice": {
      // An agent's notice is its words about itself, often naming files: the server's paths go.
      const text = state.paths.scrub([update.title, update.description].filter(Boolean).join(": "));
      if (turn) turn.sink.notice(text);
      else state.host.unsolicited({ sessionId: session.id, text, kind: "notice" });
      return;
    }
    default:
      // Anything else (updates this ACP version may add): not part of Pheby's answer text.
      return;
  }
}

/**
 * The agent's modes as a config option changed: a new list is reported whole, a new current value the
 * agent chose itself (not Pheby's switch echoed) as its own mode change.
 */
function modesUpdated(state: AcpState, session: SessionState, before: AgentModes | null): void {
  const after = modesOf(session);
  if (!after) return;
  const ids = (m: AgentModes | null) => JSON.stringify(m?.available ?? null);
  if (ids(before) !== ids(after)) state.host.sessionModes?.(session.id, withDefault(state, after));
  const current = after.currentModeId;
  if (current !== null && current !== before?.currentModeId && current !== session.switchingTo)
    state.host.modeChanged?.(session.id, current);
}

function replayed(session: SessionState, update: acp.SessionUpdate): void {
  if (update.sessionUpdate !== "user_message_chunk" && update.sessionUpdate !== "agent_message_chunk") return;
  if (update.content.type !== "text") return;
  const role = update.sessionUpdate === "user_message_chunk" ? "user" : "assistant";
  const entries = session.replay!;
  const last = entries[entries.length - 1];
  const messageId = update.messageId ?? null;
  if (last && last.role === role && messageId === session.replayMessageId) last.text += update.content.text;
  else entries.push({ role, text: update.content.text });
  session.replayMessageId = messageId;
}

/** Output outside any turn: gather briefly, then push as one message. */
function unsolicited(state: AcpState, session: SessionState, text: string): void {
  if (session.unsolicited) {
    session.unsolicited.text += text;
    return;
  }
  const timer = setTimeout(() => flushUnsolicited(state, session), state.options.unsolicitedFlushMs ?? 300);
  session.unsolicited = { text, timer };
}

/** Push gathered unsolicited output now (a turn is starting, or the gathering window ended). */
export function flushUnsolicited(state: AcpState, session: SessionState): void {
  const pending = session.unsolicited;
  if (!pending) return;
  clearTimeout(pending.timer);
  session.unsolicited = null;
  const text = stripMediaLines(pending.text);
  if (text.trim()) state.host.unsolicited({ sessionId: session.id, text });
}

/**
 * Hermes's `_hermes/notification`: background work of an idle session finished, and `text` is
 * what its CLI would prompt the agent with next. Pheby does the same, as a run nobody asked for
 * (the agent's answer is the unsolicited output), and hands the notification's receipts back in
 * that prompt's `_meta` so Hermes counts them delivered.
 */
export function hermesNotification(state: AcpState, params: unknown): void {
  const n = parseHermesNotification(params);
  if (!n || !state.sessions.has(n.sessionId) || state.deleted.has(n.sessionId)) {
    state.host.log.debug({}, "a _hermes/notification for no known session ignored");
    return;
  }
  const meta =
    n.notificationIds.length > 0 ? { [HERMES_NOTIFICATION_IDS_META]: n.notificationIds } : undefined;
  if (state.host.wake) state.host.wake({ sessionId: n.sessionId, text: n.text, ...(meta ? { meta } : {}) });
  else state.host.unsolicited({ sessionId: n.sessionId, text: n.title || n.text });
}
