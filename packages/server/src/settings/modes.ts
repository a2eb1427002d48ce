/**
 * The `modes` extension's server side: each conversation's agent modes and slash commands, the mode
 * it chose, and how that mode combines with YOLO, runs nobody started from a client and revoked
 * devices. What the agent said is persisted per conversation (store/modes.ts), so listing never
 * starts an agent, and the choice outlives agent and server restarts.
 */
import {
  type AgentCommand,
  type AgentMode,
  codePointLength,
  FEATURE_MODES,
  LIMITS,
  type ServerMessageOf,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { askingModeOf, autoApproves, yoloModeOf } from "../agent/modes.js";
import type { AgentCommandInfo, AgentModes } from "../agent/port.js";
import type { AgentRegistry } from "../agents/registry.js";
import { ProtocolError } from "../errors.js";
import { eventOf, type Outbox, type OutboxEvent } from "../outbox/outbox.js";
import type { StoredCommand, StoredMode } from "../store/modes.js";
import type { ConversationRow, Store } from "../store/store.js";
import { newId } from "../util/ids.js";
import { type Clock, iso } from "../util/time.js";
import type { Settings } from "./settings.js";

/** The notice a completed compaction of the agent's context becomes (for `modes` connections). */
export const COMPACTED_NOTICE = "The agent compacted the conversation's context.";

/** What {@link Modes} works with. */
export interface ModesDeps {
  store: Store;
  settings: Settings;
  /** Each conversation's agent (its mode table, its sessions). */
  agents: AgentRegistry;
  outbox: Outbox;
  clock: Clock;
  log: Logger;
  /**
   * The conversation's active run may not be auto-approved (nobody started it from a client): a mode
   * that approves without asking must not reach its session before the run ends.
   */
  askingRun?: (conversationId: string) => boolean;
}

/** `text` cut to `max` code points (the last one an ellipsis). */
function clip(text: string, max: number): string {
  if (codePointLength(text) <= max) return text;
  return `${Array.from(text)
    .slice(0, max - 1)
    .join("")}…`;
}

/** The agent's modes as the wire may carry them: valid IDs, once each, the first {@link LIMITS}.modes. */
export function boundedModes(modes: AgentModes): StoredMode[] {
  const out: StoredMode[] = [];
  for (const m of modes.available) {
    if (out.length >= LIMITS.modes) break;
    if (typeof m.id !== "string" || m.id.length === 0 || m.id.length > LIMITS.idChars) continue;
    if (out.some((o) => o.id === m.id)) continue;
    const name = typeof m.name === "string" && m.name.trim() ? m.name.trim() : m.id;
    const description =
      typeof m.description === "string" && m.description.trim() ? m.description.trim() : null;
    out.push({
      id: m.id,
      name: clip(name, LIMITS.modeNameChars),
      description: description === null ? null : clip(description, LIMITS.modeDescriptionChars),
    });
  }
  return out;
}

/** The agent's commands as the wire may carry them: non-blank names within bounds, once each. */
export function boundedCommands(commands: AgentCommandInfo[]): StoredCommand[] {
  const out: StoredCommand[] = [];
  for (const c of commands) {
    if (out.length >= LIMITS.commands) break;
    const name = typeof c.name === "string" ? c.name.trim().replace(/^\//, "") : "";
    if (!name || /[\r\n]/.test(name) || codePointLength(name) > LIMITS.commandNameChars) continue;
    if (out.some((o) => o.name === name)) continue;
    const hint = typeof c.hint === "string" && c.hint.trim() ? c.hint.trim() : null;
    out.push({
      name,
      description: clip(
        typeof c.description === "string" ? c.description.trim() : "",
        LIMITS.commandDescriptionChars,
      ),
      hint: hint === null ? null : clip(hint, LIMITS.commandHintChars),
    });
  }
  return out;
}

/** See the file comment. */
export class Modes {
  constructor(private readonly deps: ModesDeps) {}

  // ---- what clients see -------------------------------------------------------------------------

  /** `modes.snapshot`'s content: the last known modes, and the conversation's mode. */
  snapshot(conversationId: string): { modes: AgentMode[]; current_mode_id: string | null } {
    const row = this.deps.store.modes.get(conversationId);
    const agent = this.#agent(conversationId);
    return {
      modes: (row.modes ?? []).map((m) => ({
        mode_id: m.id,
        name: m.name,
        description: m.description,
        auto_approves: autoApproves(m.id, agent),
      })),
      current_mode_id: this.current(conversationId),
    };
  }

  /** `commands.snapshot`'s content: the last commands the agent announced (none before its first session). */
  commands(conversationId: string): AgentCommand[] {
    return this.deps.store.modes.get(conversationId).commands ?? [];
  }

  /**
   * The conversation's mode: YOLO's mode while YOLO is on (when the agent has one), else the chosen
   * one, else the mode its session opens in (never YOLO's: back to the first that asks); null when
   * nothing is known.
   */
  current(conversationId: string): string | null {
    return this.#resolve(conversationId, false);
  }

  /** The mode a turn runs in ({@link TurnSettings.mode}); `asking`: it may not approve without asking. */
  forTurn(conversationId: string, asking: boolean): string | null {
    return this.#resolve(conversationId, asking);
  }

  #resolve(conversationId: string, asking: boolean): string | null {
    const row = this.deps.store.modes.get(conversationId);
    const ids = (row.modes ?? []).map((m) => m.id);
    const agent = this.#agent(conversationId);
    const yoloMode = yoloModeOf(ids, agent);
    let mode: string | null = null;
    if (!asking && yoloMode && this.deps.settings.yolo(conversationId)) mode = yoloMode;
    else if (row.chosenModeId !== null) mode = row.chosenModeId;
    else if (row.agentModeId !== null && row.agentModeId !== yoloMode) mode = row.agentModeId;
    else if (ids.length > 0) mode = askingModeOf(ids, null, agent) ?? null;
    if (asking && mode !== null && autoApproves(mode, agent))
      mode = askingModeOf(ids, row.agentModeId, agent) ?? null;
    return mode;
  }

  // ---- requests ---------------------------------------------------------------------------------

  /**
   * `mode.set`: choose `modeId` (one of the last known modes, else `bad_request`). The agent hears it at
   * once when the session is open (a refusal is `bad_request` with its words, and nothing changes);
   * YOLO's mode is YOLO switched on, any other mode switches YOLO off. `stillAuthorized` is called after
   * the agent answered (a revoked device's request stops there). Returns the `mode.changed` reply.
   */
  async set(
    conv: ConversationRow,
    modeId: string,
    deviceId: string | null,
    stillAuthorized: () => void,
  ): Promise<ServerMessageOf<"mode.changed">> {
    const { store, settings, outbox } = this.deps;
    const ids = (store.modes.get(conv.id).modes ?? []).map((m) => m.id);
    if (!ids.includes(modeId)) {
      throw new ProtocolError("bad_request", "unknown mode_id: modes.list lists the agent's modes");
    }
    const reason = await this.#apply(conv, modeId);
    stillAuthorized();
    if (reason !== undefined) throw new ProtocolError("bad_request", `the agent refused the mode: ${reason}`);
    const agent = this.#agent(conv.id);
    const isYolo = modeId === yoloModeOf(ids, agent);
    const yolo = settings.yolo(conv.id);
    if (isYolo !== yolo) {
      settings.setYolo(conv.id, isYolo, deviceId);
      outbox.publish(
        eventOf({ type: "yolo.changed", enabled: isYolo, scope: "conversation", conversation_id: conv.id }),
      );
    }
    if (!isYolo) store.modes.choose(conv.id, modeId, deviceId, autoApproves(modeId, agent));
    return { type: "mode.changed", conversation_id: conv.id, mode_id: modeId };
  }

  /**
   * `yolo.set`: switch YOLO; when that changes the conversation's mode (YOLO's mode on, the chosen one
   * back off) the open session takes it at once, and the returned `mode.changed` is for the caller to
   * publish after its `yolo.changed`.
   */
  setYolo(conversationId: string, enabled: boolean, deviceId: string | null): OutboxEvent[] {
    const before = this.current(conversationId);
    this.deps.settings.setYolo(conversationId, enabled, deviceId);
    const changed = this.#changed(conversationId, before, true);
    return changed ? [changed] : [];
  }

  /**
   * A device was revoked: its choices of a mode that approves without asking are undone, and the
   * conversations whose YOLO it had on (`yoloOff`, already switched off) leave YOLO's mode. Each
   * conversation whose mode changed gets `mode.changed`.
   */
  revoke(deviceId: string, yoloOff: readonly string[]): number {
    const undone = this.deps.store.modes.revoke(deviceId);
    for (const conversationId of new Set([...undone, ...yoloOff])) {
      // YOLO's mode before, when the agent has one and YOLO was the device's.
      const row = this.deps.store.modes.get(conversationId);
      const ids = (row.modes ?? []).map((m) => m.id);
      const before = yoloOff.includes(conversationId)
        ? (yoloModeOf(ids, this.#agent(conversationId)) ?? null)
        : undefined;
      this.#announce(conversationId, undone.includes(conversationId) ? undefined : before, true);
    }
    return undone.length;
  }

  // ---- what the agent says ----------------------------------------------------------------------

  /**
   * The modes a session offers and the one it opens in (the host's `sessionModes`); `announce`: tell
   * the `modes` connections when that changes the conversation's mode.
   */
  sessionModes(agentId: string, sessionId: string, modes: AgentModes, announce = true): void {
    const conv = this.deps.store.conversationBySession(sessionId, agentId);
    if (!conv) return;
    const before = this.current(conv.id);
    // The backend's word for the mode its sessions open in, else what was known, else the current one.
    const opensIn =
      modes.defaultModeId ?? this.deps.store.modes.get(conv.id).agentModeId ?? modes.currentModeId;
    this.deps.store.modes.setModes(conv.id, boundedModes(modes), opensIn);
    if (announce) this.#announce(conv.id, before, false);
  }

  /**
   * The agent switched mode by itself: that mode becomes the conversation's (YOLO goes off when it
   * leaves YOLO's mode). A switch into YOLO's mode is not adopted: only a client switches YOLO on.
   */
  modeChanged(agentId: string, sessionId: string, modeId: string): void {
    const conv = this.deps.store.conversationBySession(sessionId, agentId);
    if (!conv) return;
    const ids = (this.deps.store.modes.get(conv.id).modes ?? []).map((m) => m.id);
    const agent = this.#agent(conv.id);
    if (!ids.includes(modeId) || modeId === yoloModeOf(ids, agent)) {
      this.deps.log.info({ conversation: conv.id }, "the agent's own switch to a mode not adopted");
      return;
    }
    const before = this.current(conv.id);
    if (this.deps.settings.yolo(conv.id)) {
      this.deps.settings.setYolo(conv.id, false);
      this.deps.outbox.publish(
        eventOf({ type: "yolo.changed", enabled: false, scope: "conversation", conversation_id: conv.id }),
      );
    }
    this.deps.store.modes.choose(conv.id, modeId, null, autoApproves(modeId, agent));
    this.#announce(conv.id, before, false);
  }

  /**
   * The agent announced its commands: stored, and (`announce`) sent to every `modes` connection when
   * they changed.
   */
  sessionCommands(agentId: string, sessionId: string, commands: AgentCommandInfo[], announce = true): void {
    const conv = this.deps.store.conversationBySession(sessionId, agentId);
    if (!conv) return;
    const bounded = boundedCommands(commands);
    const known = this.deps.store.modes.get(conv.id).commands;
    if (known !== null && JSON.stringify(known) === JSON.stringify(bounded)) return;
    this.deps.store.modes.setCommands(conv.id, bounded);
    if (announce)
      this.deps.outbox.publish(
        eventOf({ type: "commands.snapshot", conversation_id: conv.id, commands: bounded }),
      );
  }

  /** The agent compacted a session's context: a notice for the `modes` connections. */
  compacted(agentId: string, sessionId: string): void {
    const conv = this.deps.store.conversationBySession(sessionId, agentId);
    if (!conv) return;
    this.deps.outbox.publish({
      ...eventOf({
        type: "message.complete",
        conversation_id: conv.id,
        message_id: `notice-${newId()}`,
        text: COMPACTED_NOTICE,
        kind: "notice",
        ts: iso(this.deps.clock.now()),
      }),
      feature: FEATURE_MODES,
    });
  }

  /**
   * A conversation now has the session `conv.session_id` (created, or a replacement): take what the
   * backend already knows of it, said before the session had a conversation (right after
   * `session/new`, the agent announces its commands). `announce` false: a conversation being created,
   * which no client knows yet, is only recorded (its clients ask with `modes.list`, `commands.list`).
   */
  catchUp(conv: ConversationRow, announce = true): void {
    if (!conv.session_id) return;
    const agent = this.deps.agents.agentOf(conv);
    const info = agent.backend.sessionInfo?.(conv.session_id);
    if (info?.modes) this.sessionModes(agent.id, conv.session_id, info.modes, announce);
    if (info?.commands) this.sessionCommands(agent.id, conv.session_id, info.commands, announce);
  }

  // ---- internals --------------------------------------------------------------------------------

  /** Which agent the mode table applies to (agent/modes.ts); null: the rule for unknown agents. */
  #agent(conversationId: string): string | null {
    return this.deps.agents.backendOf(conversationId).modesAgent?.() ?? null;
  }

  /**
   * Put the conversation's open session in `modeId` now. Resolves with the agent's refusal, or
   * undefined (applied, or the session is not open: its next turn takes the mode). A mode that
   * approves without asking waits while a run nobody started from a client is active.
   */
  async #apply(conv: ConversationRow, modeId: string): Promise<string | undefined> {
    const backend = this.deps.agents.backendOf(conv);
    if (!conv.session_id || !backend.setMode) return undefined;
    if (autoApproves(modeId, this.#agent(conv.id)) && this.deps.askingRun?.(conv.id)) return undefined;
    const result = await backend.setMode(conv.session_id, modeId);
    return result.outcome === "refused" ? result.reason : undefined;
  }

  /**
   * Tell the `modes` connections the conversation's mode, when it differs from `before` (undefined:
   * always); `apply`: the open session takes it now (a refusal is logged; the next turn tries again).
   */
  #announce(conversationId: string, before: string | null | undefined, apply: boolean): void {
    const changed = this.#changed(conversationId, before, apply);
    if (changed) this.deps.outbox.publish(changed);
  }

  /** {@link #announce}'s `mode.changed`, returned instead of published (undefined: no change). */
  #changed(
    conversationId: string,
    before: string | null | undefined,
    apply: boolean,
  ): OutboxEvent | undefined {
    const after = this.current(conversationId);
    if (after === null || after === before) return undefined;
    const conv = apply ? this.deps.store.getConversation(conversationId) : undefined;
    if (conv) {
      this.#apply(conv, after).then(
        (reason) => {
          if (reason !== undefined)
            this.deps.log.warn({ conversation: conversationId }, "the agent refused a mode change");
        },
        (err) => this.deps.log.warn({ err, conversation: conversationId }, "a mode change failed"),
      );
    }
    return eventOf({ type: "mode.changed", conversation_id: conversationId, mode_id: after });
  }
}
