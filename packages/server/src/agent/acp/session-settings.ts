/**
 * Putting an ACP session in the mode, model and reasoning effort a turn
 * wants, and recording what the agent says its settings are.
 */
import * as acp from "@agentclientprotocol/sdk";
import type { TurnSettings, TurnSink } from "../port.js";
import { AgentGoneError, type AgentProcess, agentErrorText, errorMessage } from "./process.js";
import {
  currentModelOf,
  effortStep,
  effortsOf,
  modelStep,
  type SessionSettingsState,
  type SettingStep,
} from "./settings.js";
import { type AcpState, drain, type SessionState } from "./state.js";

const YOLO_MODE = /yolo|bypass/i;

/** Record what the agent says a session's settings are, and what its model offers. */
export function setSettings(state: AcpState, session: SessionState, settings: SessionSettingsState): void {
  session.settings = settings;
  const model = currentModelOf(settings);
  if (model) state.modelEfforts.set(model, effortsOf(settings).efforts);
}

/** Switch the session's mode, when the agent has it and it is not current; a refusal is logged. */
export async function setMode(
  state: AcpState,
  proc: AgentProcess,
  session: SessionState,
  modeId: string,
): Promise<void> {
  const modes = session.modes;
  if (!modes || modes.currentModeId === modeId || !modes.availableModes.some((m) => m.id === modeId)) return;
  try {
    await proc.request("session/set_mode", { sessionId: session.id, modeId }, state.requestTimeoutMs);
    modes.currentModeId = modeId;
  } catch (err) {
    if (err instanceof AgentGoneError) throw err;
    state.host.log.warn({ err: errorMessage(err), modeId }, "agent refused a mode change");
  }
}

/**
 * Apply YOLO mode, model and effort before a prompt; only what differs is sent. The effort is
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
  const modes = session.modes;
  const yoloMode = modes?.availableModes.find((m) => YOLO_MODE.test(m.id))?.id;
  if (yoloMode && settings.yolo) await setMode(state, proc, session, yoloMode);
  else if (yoloMode && modes?.currentModeId === yoloMode) {
    const back = state.options.mode ?? modes.availableModes.find((m) => m.id !== yoloMode)?.id;
    if (back) await setMode(state, proc, session, back);
  }
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
