import { REASONING_EFFORTS } from "@pheby/protocol";
import type { AgentCatalogue, TurnSettings } from "../port.js";

/**
 * The simulator's model catalogue: two providers, fictional model names (no
 * real provider is implied), every reasoning level. Part of the simulator's
 * stable interface (docs/simulator.md).
 */
export const SIM_CATALOGUE: AgentCatalogue = {
  providers: [
    { slug: "simcloud", name: "Sim Cloud", models: ["sim/fast-1", "sim/pro-2", "sim/reasoner-3"] },
    { slug: "simlocal", name: "Sim Local", models: ["local/tiny-1b", "local/coder-7b"] },
  ],
  defaultModel: { model: "sim/fast-1", provider: "simcloud" },
  reasoningEfforts: [...REASONING_EFFORTS],
  defaultEffort: "medium",
};

/** How a reply says which settings its turn used, e.g. `[model: sim/fast-1 (simcloud), reasoning: medium]`. */
export function settingsTag(settings: TurnSettings): string {
  const model = settings.model
    ? `${settings.model.model}${settings.model.provider ? ` (${settings.model.provider})` : ""}`
    : "default";
  const effort = settings.effort === "none" ? "none (thinking off)" : (settings.effort ?? "provider default");
  return `[model: ${model}, reasoning: ${effort}]`;
}
