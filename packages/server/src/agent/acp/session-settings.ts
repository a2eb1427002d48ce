/**
 * Putting an ACP session in the mode, model and reasoning effort a turn
 * wants, and recording what the agent says its settings are.
 */
import { basename } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { askingModeOf, autoApproves, yoloModeOf } from "../modes.js";
import type { AgentModes, TurnSettings, TurnSink } from "../port.js";
import { AgentGoneError, type AgentProcess, agentErrorText, errorMessage } from "./process.js";
import {
  currentModelOf,
  effortStep,
  effortsOf,
  modelStep,
  modeOption,
  optionValues,
  type SessionSettingsState,
  type SettingStep,
} from "./settings.js";
import { type AcpState, drain, type SessionState } from "./state.js";

/** Record what the agent says a session's settings are, and what its model offers. */
export function setSettings(state: AcpState, session: SessionState, settings: SessionSettingsState): void {
  session.settings = settings;
  const model = currentModelOf(settings);
  if (model) state.modelEfforts.set(model, effortsOf(settings).efforts);
}

/**
 * A session's modes: ACP's session `modes`, else a config option of category `mode` (whose values
 * are the modes, switched with `session/set_config_option`); null when it has neither.
 */
export function modesOf(session: SessionState): AgentModes | null {
  if (session.modes) {
    return {
      available: session.modes.availableModes.map((m) => ({
        id: m.id,
        name: m.name,
        description: m.description ?? null,
      })),
      currentModeId: session.modes.currentModeId,
    };
  }
  const option = modeOption(session.settings);
  if (!option) return null;
  return {
    available: optionValues(option).map((v) => ({
      id: v.value,
      name: v.name,
      description: v.description ?? null,
    })),
    currentModeId: option.currentValue,
  };
}

/** A session's modes with the mode it opens in when Pheby chose none: the configured one, else the agent's default. */
export function withDefault(state: AcpState, modes: AgentModes): AgentModes {
  const offered = (id: string | null | undefined) =>
    id && modes.available.some((m) => m.id === id) ? id : null;
  return { ...modes, defaultModeId: offered(state.options.mode) ?? offered(state.defaultModeId) };
}

/** Switch the session's mode (session/set_mode, or the mode config option); the agent's refusal in its words. */
export async function switchMode(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
  modeId: string,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const modes = modesOf(session);
  if (!modes?.available.some((m) => m.id === modeId))
    return { ok: false, reason: `the agent does not offer the mode ${modeId}` };
  if (modes.currentModeId === modeId) return { ok: true };
  session.switchingTo = modeId;
  try {
    if (session.modes) {
      await proc.request("session/set_mode", { sessionId: session.id, modeId }, state.requestTimeoutMs);
      session.modes.currentModeId = modeId;
    } else {
      const option = modeOption(session.settings)!;
      const response = await proc.request<acp.SetSessionConfigOptionResponse>(
        "session/set_config_option",
        { sessionId: session.id, configId: option.id, value: modeId },
        state.requestTimeoutMs,
      );
      await drain(session);
      const configOptions = response.configOptions ?? [];
      if (configOptions.length > 0) setSettings(state, session, { ...session.settings, configOptions });
      const now = modeOption(session.settings);
      if (now) now.currentValue = modeId;
    }
    return { ok: true };
  } catch (err) {
    if (err instanceof acp.RequestError) return { ok: false, reason: agentErrorText(err, state.paths) };
    throw err;
  } finally {
    session.switchingTo = null;
  }
}

/** Switch the session's mode, when the agent has it and it is not current; a refusal is logged. */
export async function setMode(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
  modeId: string,
): Promise<void> {
  try {
    const result = await switchMode(state, proc, session, modeId);
    if (!result.ok) state.host.log.warn({ err: result.reason, modeId }, "agent refused a mode change");
  } catch (err) {
    if (err instanceof AgentGoneError) throw err;
    state.host.log.warn({ err: errorMessage(err), modeId }, "agent refused a mode change");
  }
}

/**
 * Which agent the mode table (agent/modes.ts) applies to: the name it gave at `initialize`, else,
 * before it first ran, the basename of the command that starts it.
 */
export function modesAgentOf(state: AcpState): string | null {
  return state.init?.agentInfo?.name ?? (basename(state.options.command[0] ?? "") || null);
}

/**
 * The mode a turn's settings want the session in: the server's resolved mode when the agent offers
 * it, else YOLO's mode while YOLO is on; else, out of YOLO's mode when YOLO is off, and out of any
 * mode that approves without asking when the turn must ask ({@link TurnSettings.asking}), back to the
 * configured mode or the first that asks. Undefined: leave the session as it is.
 */
export function wantedMode(
  state: AcpState,
  session: SessionState,
  settings: TurnSettings,
): string | undefined {
  const modes = modesOf(session);
  if (!modes) return undefined;
  const ids = modes.available.map((m) => m.id);
  const agent = modesAgentOf(state);
  const yoloMode = yoloModeOf(ids, agent);
  const asking = settings.asking === true;
  let target: string | undefined;
  if (settings.mode && ids.includes(settings.mode)) target = settings.mode;
  else if (settings.yolo && !asking && yoloMode) target = yoloMode;
  const current = target ?? modes.currentModeId;
  if (current && ((current === yoloMode && !settings.yolo) || (asking && autoApproves(current, agent)))) {
    return askingModeOf(ids, state.options.mode, agent);
  }
  return target;
}

/**
 * Apply the mode, model and effort before a prompt; only what differs is sent. The effort is
 * judged after the model is switched (it may appear, vanish or change values with the model);
 * a setting the agent does not offer is dropped and the user told in a notice.
 */
export async function applySettings(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
  settings: TurnSettings,
  sink: TurnSink,
): Promise<void> {
  const mode = wantedMode(state, session, settings);
  if (mode) await setMode(state, proc, session, mode);
  await applyStep(state, proc, session, modelStep(session.settings, settings.model), sink);
  await applyStep(state, proc, session, effortStep(session.settings, settings.effort), sink);
}

async function applyStep(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
  step: SettingStep,
  sink: TurnSink,
): Promise<void> {
  if (step.unavailable) {
    sink.notice(`Setting skipped: ${step.unavailable}; this turn uses the agent's current setting.`);
    return;
  }
  const change = step.change;
  if (!change) return;
  try {
    if (change.kind === "config") {
      const response = await proc.request<acp.SetSessionConfigOptionResponse>(
        "session/set_config_option",
        { sessionId: session.id, configId: change.configId, value: change.value },
        state.requestTimeoutMs,
      );
      // The response is the whole new state; updates queued before it say the same or less.
      await drain(session);
      if (response.configOptions) {
        setSettings(state, session, { ...session.settings, configOptions: response.configOptions });
      }
    } else {
      await proc.request(
        "session/set_model",
        { sessionId: session.id, modelId: change.modelId },
        state.requestTimeoutMs,
      );
      const legacy = session.settings.legacyModels;
      if (legacy)
        setSettings(state, session, {
          ...session.settings,
          legacyModels: { ...legacy, currentModelId: change.modelId },
        });
    }
  } catch (err) {
    if (!(err instanceof acp.RequestError)) throw err;
    const what = change.kind === "config" ? `${change.configId} ${change.value}` : `model ${change.modelId}`;
    sink.notice(`Setting skipped: the agent refused ${what} (${agentErrorText(err, state.paths)}).`);
  }
}
