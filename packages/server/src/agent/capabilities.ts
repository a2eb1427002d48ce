/**
 * The only code that knows a backend may start its agent lazily (ACP): such a
 * backend reports optimistic capabilities until its agent has declared its
 * own, and may learn some (models, reasoning) only with its catalogue. Every
 * capability check of the server goes through here, so call order elsewhere
 * cannot make an answer wrong.
 */
import type { AgentBackend, AgentCapabilities, AgentCatalogue } from "./port.js";

/** The backend's capabilities once its agent is up. Throws when the agent cannot be started. */
export async function readyCapabilities(backend: AgentBackend): Promise<AgentCapabilities> {
  await backend.ensureReady?.();
  return backend.capabilities;
}

/** A catalogue and the capabilities known once it was read. */
export interface Catalogued {
  catalogue: AgentCatalogue;
  capabilities: AgentCapabilities;
}

/**
 * The catalogue, when the agent has `capability` (checked before and after
 * reading it: a lazy backend may learn it only then); null when it has not.
 */
export async function catalogueFor(
  backend: AgentBackend,
  capability: "models" | "reasoning",
): Promise<Catalogued | null> {
  const before = await readyCapabilities(backend);
  if (!before[capability] || !backend.catalogue) return null;
  const catalogue = await backend.catalogue();
  const capabilities = backend.capabilities;
  return capabilities[capability] ? { catalogue, capabilities } : null;
}

/** What {@link turnCatalogue} found: the catalogue, or why it could not be read. */
export interface TurnCatalogue {
  catalogue: AgentCatalogue | undefined;
  error?: unknown;
  capabilities: AgentCapabilities;
}

/**
 * The catalogue a turn's settings are resolved with: undefined `catalogue`
 * (with the `error`) when reading it failed, null when the agent has neither
 * models nor reasoning. It does not start the agent first: the turn will.
 */
export async function turnCatalogue(backend: AgentBackend): Promise<TurnCatalogue | null> {
  const { catalogue } = backend;
  if (!(backend.capabilities.models || backend.capabilities.reasoning) || !catalogue) return null;
  try {
    const read = await catalogue.call(backend);
    return { catalogue: read, capabilities: backend.capabilities };
  } catch (error) {
    // Read after the failure too: a lazy backend may know its capabilities by now.
    return { catalogue: undefined, error, capabilities: backend.capabilities };
  }
}
