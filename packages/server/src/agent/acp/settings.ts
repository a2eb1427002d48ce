/**
 * Models and reasoning effort from an ACP session: the config options with
 * category `model` and `thought_level`, or the legacy `models` state with
 * `session/set_model` that Hermes and Qwen Code still return.
 */
import type {
  SessionConfigOption,
  SessionConfigSelectGroup,
  SessionConfigSelectOption,
} from "@agentclientprotocol/sdk";
import { REASONING_EFFORTS, type ReasoningEffort } from "@pheby/protocol";
import type { AgentCatalogue, AgentModelProvider } from "../port.js";
import { providersOfPrefixedModels } from "./hermes.js";

/** The legacy (pre-config-options) model state some agents still return. */
export interface LegacyModels {
  availableModels: Array<{ modelId: string; name?: string; description?: string | null }>;
  currentModelId: string;
}

/** What an agent said about a session's settings. */
export interface SessionSettingsState {
  configOptions: SessionConfigOption[];
  legacyModels: LegacyModels | null;
}

type SelectOption = Extract<SessionConfigOption, { type: "select" }>;

function select(state: SessionSettingsState, category: string): SelectOption | undefined {
  return state.configOptions.find((o): o is SelectOption => o.type === "select" && o.category === category);
}

/** The select option of category `mode`: an agent's modes as a config option (when it has no session `modes`). */
export function modeOption(state: SessionSettingsState): SelectOption | undefined {
  return select(state, "mode");
}

/** The selectable values of a select option, each with its group (provider) when grouped. */
type Value = SessionConfigSelectOption & { group: string | null; groupName: string | null };

/** Every value of a select option, groups flattened. */
export function optionValues(option: SelectOption): Value[] {
  return values(option);
}

function values(option: SelectOption): Value[] {
  return (option.options as Array<SessionConfigSelectOption | SessionConfigSelectGroup>).flatMap(
    (entry): Value[] =>
      "group" in entry
        ? entry.options.map((o) => ({ ...o, group: entry.group, groupName: entry.name }))
        : [{ ...entry, group: null, groupName: null }],
  );
}

/** Read the legacy `models` field of a session response, if present and well formed. */
export function legacyModelsOf(response: unknown): LegacyModels | null {
  const models = (response as { models?: unknown } | null)?.models as Partial<LegacyModels> | undefined;
  if (!models || !Array.isArray(models.availableModels) || typeof models.currentModelId !== "string")
    return null;
  const available = models.availableModels.filter((m) => typeof m?.modelId === "string");
  return { availableModels: available, currentModelId: models.currentModelId };
}

const EFFORT_ALIASES: Record<string, ReasoningEffort> = { off: "none", disabled: "none", disable: "none" };

/** Map an agent's thought-level value to a Pheby effort, when it names one. */
export function effortOf(value: string): ReasoningEffort | null {
  const v = value.toLowerCase();
  if ((REASONING_EFFORTS as readonly string[]).includes(v)) return v as ReasoningEffort;
  return EFFORT_ALIASES[v] ?? null;
}

/** The model a session currently uses, if it says. */
export function currentModelOf(state: SessionSettingsState): string | null {
  const modelOption = select(state, "model");
  if (modelOption) return modelOption.currentValue;
  return state.legacyModels?.currentModelId ?? null;
}

/** The Pheby efforts a session offers now (they can change with its model), and the current one. */
export function effortsOf(state: SessionSettingsState): {
  efforts: ReasoningEffort[];
  current: ReasoningEffort | null;
} {
  const thought = select(state, "thought_level");
  const efforts: ReasoningEffort[] = [];
  let current: ReasoningEffort | null = null;
  for (const v of thought ? values(thought) : []) {
    const effort = effortOf(v.value) ?? effortOf(v.name);
    if (effort && !efforts.includes(effort)) efforts.push(effort);
    if (effort && v.value === thought?.currentValue) current = effort;
  }
  return { efforts, current };
}

/**
 * Build the catalogue of one session. `agentName` names the provider of ungrouped models;
 * `modelEfforts` are the efforts seen per model so far (see {@link AgentCatalogue.modelEfforts}).
 */
export function catalogueOf(
  state: SessionSettingsState,
  agentName: string,
  modelEfforts: ReadonlyMap<string, ReasoningEffort[]> = new Map(),
): AgentCatalogue {
  const providers: AgentModelProvider[] = [];
  let defaultModel: AgentCatalogue["defaultModel"] = null;
  const modelOption = select(state, "model");
  if (modelOption) {
    for (const v of values(modelOption)) {
      const slug = v.group ?? agentName;
      let provider = providers.find((p) => p.slug === slug);
      if (!provider) {
        provider = { slug, name: v.groupName ?? agentName, models: [] };
        providers.push(provider);
      }
      provider.models.push(v.value);
      if (v.value === modelOption.currentValue) defaultModel = { model: v.value, provider: slug };
    }
  } else if (state.legacyModels) {
    const { availableModels, currentModelId } = state.legacyModels;
    // Hermes names its models `provider:model`: one provider each, the IDs kept whole for switching.
    const grouped = providersOfPrefixedModels(availableModels);
    if (grouped) providers.push(...grouped);
    else providers.push({ slug: agentName, name: agentName, models: availableModels.map((m) => m.modelId) });
    const current = providers.find((p) => p.models.includes(currentModelId));
    defaultModel = { model: currentModelId, provider: current?.slug ?? providers[0]?.slug ?? agentName };
  }
  const { efforts, current } = effortsOf(state);
  // Every effort some model offers may be chosen; per model, `modelEfforts` says which apply.
  const all = new Set([...efforts, ...[...modelEfforts.values()].flat()]);
  return {
    providers,
    defaultModel,
    reasoningEfforts: REASONING_EFFORTS.filter((e) => all.has(e)),
    defaultEffort: current,
    modelEfforts: Object.fromEntries(modelEfforts),
  };
}

/** Whether a session offers model selection. */
export function hasModels(state: SessionSettingsState): boolean {
  return select(state, "model") !== undefined || state.legacyModels !== null;
}

/** Whether a session offers reasoning levels. */
export function hasReasoning(state: SessionSettingsState): boolean {
  return select(state, "thought_level") !== undefined;
}

/** One change to send before a prompt. */
export type SettingChange =
  | { kind: "config"; configId: string; value: string }
  | { kind: "legacyModel"; modelId: string };

/** What to do for one wanted setting: nothing, a change, or tell the user it is not offered. */
export type SettingStep = { change: SettingChange | null; unavailable: string | null };

const NOTHING: SettingStep = { change: null, unavailable: null };

/** The change that puts the session on the wanted model, judged from the session's current state. */
export function modelStep(
  state: SessionSettingsState,
  want: { model: string; provider: string | null } | null,
): SettingStep {
  if (!want) return NOTHING;
  const missing = { change: null, unavailable: `the model ${want.model} is not offered by the agent` };
  const modelOption = select(state, "model");
  if (modelOption) {
    const match = values(modelOption).find(
      (v) => v.value === want.model && (v.group === null || !want.provider || v.group === want.provider),
    );
    if (!match) return missing;
    return match.value === modelOption.currentValue
      ? NOTHING
      : { change: { kind: "config", configId: modelOption.id, value: match.value }, unavailable: null };
  }
  if (state.legacyModels) {
    if (!state.legacyModels.availableModels.some((m) => m.modelId === want.model)) return missing;
    return state.legacyModels.currentModelId === want.model
      ? NOTHING
      : { change: { kind: "legacyModel", modelId: want.model }, unavailable: null };
  }
  return missing;
}

/**
 * The change that sets the wanted effort, judged from the session's current state: efforts come
 * and go with the model, so this must run after the model is switched.
 */
export function effortStep(state: SessionSettingsState, want: ReasoningEffort | null): SettingStep {
  if (!want) return NOTHING;
  const thought = select(state, "thought_level");
  const match = thought && values(thought).find((v) => (effortOf(v.value) ?? effortOf(v.name)) === want);
  if (!thought || !match) {
    const model = currentModelOf(state);
    return {
      change: null,
      unavailable: `reasoning effort ${want} is not offered${model ? ` with the model ${model}` : ""}`,
    };
  }
  return match.value === thought.currentValue
    ? NOTHING
    : { change: { kind: "config", configId: thought.id, value: match.value }, unavailable: null };
}
