import type { ReasoningEffort, SettingScope } from "@pheby/protocol";
import type { Logger } from "pino";
import { type Catalogued, catalogueFor, turnCatalogue } from "../agent/capabilities.js";
import type { AgentCatalogue, TurnSettings } from "../agent/port.js";
import type { AgentRegistry } from "../agents/registry.js";
import { ProtocolError } from "../errors.js";
import type { ScopeSettings, SettingsStore } from "../store/settings.js";

/** An effective model and where it comes from. */
export interface CurrentModel {
  model: string | null;
  provider: string | null;
  scope: SettingScope;
}

/** An effective reasoning effort and where it comes from. */
export interface CurrentEffort {
  effort: ReasoningEffort | null;
  scope: SettingScope;
}

const UNSET: ScopeSettings = { model: null, provider: null, effort: null };
const EMPTY_CATALOGUE: AgentCatalogue = {
  providers: [],
  defaultModel: null,
  reasoningEfforts: [],
  defaultEffort: null,
};

/**
 * The server-owned settings: YOLO per conversation, and model / reasoning
 * effort as a conversation override, else the global default, else the
 * agent's own default from its catalogue. Nothing about models is hard-coded
 * here; the backend's catalogue is the only source of names. Global defaults are per agent: a
 * conversation's are its own agent's; without a conversation, `agentId`'s (default: the default agent).
 */
export class Settings {
  constructor(
    private readonly store: SettingsStore,
    private readonly agents: AgentRegistry,
    private readonly log: Logger,
  ) {}

  /** The agent whose global defaults apply: the conversation's, else `agentId`, else the default agent. */
  agentOf(conversationId: string | undefined, agentId?: string): string {
    if (conversationId !== undefined) return this.agents.agentOf(conversationId).id;
    return agentId ?? this.agents.defaultAgent.id;
  }

  yolo(conversationId: string): boolean {
    return this.store.yolo(conversationId);
  }

  /** Switch YOLO; `deviceId`: the paired device switching it (null: the owner), so revoking it switches it off. */
  setYolo(conversationId: string, enabled: boolean, deviceId: string | null = null): void {
    this.store.setYolo(conversationId, enabled, deviceId);
  }

  /** Switch off the YOLO a revoked device switched on; returns those conversations. */
  revokeYolo(deviceId: string): string[] {
    return this.store.revokeYolo(deviceId);
  }

  /** An agent's catalogue (and capabilities), or `not_implemented` when it lacks the capability. */
  async catalogue(capability: "models" | "reasoning", agentId: string): Promise<Catalogued> {
    const backend = this.agents.use({ agentId });
    const found = await catalogueFor(backend, capability);
    if (!found) {
      const what = capability === "models" ? "Model selection" : "Reasoning effort";
      throw new ProtocolError("not_implemented", `${what} is not supported by this agent`);
    }
    return found;
  }

  /** The effective model of a conversation (or `agentId`'s global one when `conversationId` is undefined). */
  model(catalogue: AgentCatalogue, conversationId?: string, agentId?: string): CurrentModel {
    const own = this.#overrides(conversationId);
    if (own.model !== null) return { model: own.model, provider: own.provider, scope: "conversation" };
    const global = this.store.global(this.agentOf(conversationId, agentId));
    if (global.model !== null) return { model: global.model, provider: global.provider, scope: "global" };
    const fallback = catalogue.defaultModel;
    return { model: fallback?.model ?? null, provider: fallback?.provider ?? null, scope: "global" };
  }

  /** The effective reasoning effort of a conversation (or `agentId`'s global one). */
  effort(catalogue: AgentCatalogue, conversationId?: string, agentId?: string): CurrentEffort {
    const own = this.#overrides(conversationId);
    if (own.effort !== null) return { effort: own.effort, scope: "conversation" };
    const global = this.store.global(this.agentOf(conversationId, agentId)).effort;
    return global !== null
      ? { effort: global, scope: "global" }
      : { effort: catalogue.defaultEffort, scope: "global" };
  }

  /**
   * Persist a model for a scope. The model must be in the catalogue (under
   * `provider` when given); without a provider, the first provider listing it
   * is recorded. Anything else is `bad_request`.
   */
  setModel(
    catalogue: AgentCatalogue,
    conversationId: string | undefined,
    model: string,
    provider: string | undefined,
    agentId?: string,
  ): { model: string; provider: string | null } {
    const candidates =
      provider === undefined ? catalogue.providers : catalogue.providers.filter((p) => p.slug === provider);
    if (provider !== undefined && candidates.length === 0) {
      throw new ProtocolError("bad_request", "provider: not in the agent's catalogue");
    }
    const owner = candidates.find((p) => p.models.includes(model));
    if (!owner) throw new ProtocolError("bad_request", "model: not in the agent's catalogue");
    this.store.setModel(conversationId, model, owner.slug, this.agentOf(conversationId, agentId));
    return { model, provider: owner.slug };
  }

  /**
   * The efforts that apply with `model`: its own when the agent told them (they can differ per
   * model), else the catalogue's list.
   */
  efforts(catalogue: AgentCatalogue, model: string | null): ReasoningEffort[] {
    return (model !== null ? catalogue.modelEfforts?.[model] : undefined) ?? catalogue.reasoningEfforts;
  }

  /** Persist a reasoning effort for a scope; a level the agent does not list is `bad_request`. */
  setEffort(
    catalogue: AgentCatalogue,
    conversationId: string | undefined,
    effort: ReasoningEffort,
    agentId?: string,
  ): void {
    if (!catalogue.reasoningEfforts.includes(effort)) {
      throw new ProtocolError("bad_request", "effort: not supported by this agent");
    }
    this.store.setEffort(conversationId, effort, this.agentOf(conversationId, agentId));
  }

  /**
   * The effective settings handed to the backend with a turn. Read when the
   * turn starts, so a change during a run applies from the next turn. A
   * failing catalogue only loses the agent defaults (the backend applies its own).
   */
  async forTurn(conversationId: string): Promise<TurnSettings> {
    const yolo = this.store.yolo(conversationId);
    const found = await turnCatalogue(this.agents.backendOf(conversationId));
    if (!found) return { model: null, effort: null, yolo };
    if (found.error !== undefined) {
      this.log.warn({ err: found.error }, "agent catalogue unavailable; the turn uses stored settings only");
    }
    const cat = found.catalogue ?? EMPTY_CATALOGUE;
    const current = this.model(cat, conversationId);
    const { capabilities } = found;
    return {
      model:
        capabilities.models && current.model !== null
          ? { model: current.model, provider: current.provider }
          : null,
      effort: capabilities.reasoning ? this.effort(cat, conversationId).effort : null,
      yolo,
    };
  }

  #overrides(conversationId: string | undefined): ScopeSettings {
    return conversationId === undefined ? UNSET : this.store.conversation(conversationId);
  }
}
