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

/** The legacy (pre-config-options) model state some agents still return. */
export interface LegacyModels {
  availableModels: Array<{ modelId: string; name?: string }>;
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

/** The selectable values of a select option, each with its group (provider) when grouped. */
type Value = SessionConfigSelectOption & { group: string | null; groupName: string | null };

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

/** Build the catalogue of one session. `agentName` names the provider of ungrouped models. */
export function catalogueOf(state: SessionSettingsState, agentName: string): AgentCatalogue {
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
    providers.push({
      slug: agentName,
      name: agentName,
      models: state.legacyModels.availableModels.map((m) => m.modelId),
    });
    defaultModel = { model: state.legacyModels.currentModelId, provider: agentName };
  }
  const thought = select(state, "thought_level");
  const reasoningEfforts: ReasoningEffort[] = [];
  let defaultEffort: ReasoningEffort | null = null;
  if (thought) {
    for (const v of values(thought)) {
      const effort = effortOf(v.value) ?? effortOf(v.name);
      if (effort && !reasoningEfforts.includes(effort)) reasoningEfforts.push(effort);
      if (effort && v.value === thought.currentValue) defaultEffort = effort;
    }
  }
  return { providers, defaultModel, reasoningEfforts, defaultEffort };
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

/**
 * The changes needed so the session matches the wanted model and effort. Only
 * differences are returned; values the agent does not offer are reported in `unavailable`.
 */
export function settingChanges(
  state: SessionSettingsState,
  want: { model: { model: string; provider: string | null } | null; effort: ReasoningEffort | null },
): { changes: SettingChange[]; unavailable: string[] } {
  const changes: SettingChange[] = [];
  const unavailable: string[] = [];
  if (want.model) {
    const modelOption = select(state, "model");
    if (modelOption) {
      const match = values(modelOption).find(
        (v) =>
          v.value === want.model?.model &&
          (v.group === null || !want.model.provider || v.group === want.model.provider),
      );
      if (!match) unavailable.push(`model ${want.model.model}`);
      else if (match.value !== modelOption.currentValue) {
        changes.push({ kind: "config", configId: modelOption.id, value: match.value });
      }
    } else if (state.legacyModels) {
      const known = state.legacyModels.availableModels.some((m) => m.modelId === want.model?.model);
      if (!known) unavailable.push(`model ${want.model.model}`);
      else if (state.legacyModels.currentModelId !== want.model.model) {
        changes.push({ kind: "legacyModel", modelId: want.model.model });
      }
    } else unavailable.push(`model ${want.model.model}`);
  }
  if (want.effort) {
    const thought = select(state, "thought_level");
    const match =
      thought && values(thought).find((v) => (effortOf(v.value) ?? effortOf(v.name)) === want.effort);
    if (!thought || !match) unavailable.push(`reasoning effort ${want.effort}`);
    else if (match.value !== thought.currentValue)
      changes.push({ kind: "config", configId: thought.id, value: match.value });
  }
  return { changes, unavailable };
}
