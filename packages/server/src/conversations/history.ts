import type { Logger } from "pino";
import { readyCapabilities } from "../agent/capabilities.js";
import type { AgentRegistry } from "../agents/registry.js";
import type { ConversationRow, Store } from "../store/store.js";

/** What {@link HistoryRefresh} needs. */
export interface HistoryRefreshDeps {
  store: Store;
  /** Each conversation's agent, which replays it. */
  agents: AgentRegistry;
  log: Logger;
  /** Whether the conversation has an active run (its mirror is being written live). */
  running(conversationId: string): boolean;
}

/**
 * History for `conversation.open` comes from the server's transcript mirror. A mirror can be
 * empty while the agent holds the conversation: a session imported from the agent's own list,
 * or a conversation whose mirror was lost. The rule:
 *
 * - when a conversation's mirror is empty, it has an agent session, no run is active and the
 *   backend can replay history (`loadHistory`), the replay is copied into the mirror, once;
 * - one attempt per conversation and process: success, an empty replay or an error (logged at
 *   debug; the mirror is served) all count, so an agent that cannot replay is not asked again
 *   at every open;
 * - conversations created by this server start authoritative and are never replayed;
 * - while a replay runs, `chat.send` in that conversation waits for it, so a live turn never
 *   interleaves with the replay.
 *
 * A non-empty mirror is never replaced: its message IDs are paging cursors, and the replay
 * carries no run, tool or attachment records.
 */
export class HistoryRefresh {
  readonly #settled = new Set<string>();
  readonly #running = new Map<string, Promise<void>>();

  constructor(private readonly deps: HistoryRefreshDeps) {}

  /** The conversation's mirror is authoritative (it was created here); never replay it. */
  authoritative(conversationId: string): void {
    this.#settled.add(conversationId);
  }

  /** Refresh an empty mirror from the agent's replay if the rule allows; never throws. */
  refresh(conv: ConversationRow): Promise<void> {
    const { store, agents, log } = this.deps;
    const backend = agents.backendOf(conv);
    const running = this.#running.get(conv.id);
    if (running) return running;
    if (this.#settled.has(conv.id) || !conv.session_id) return Promise.resolve();
    if (store.messagePage(conv.id, 1).rows.length > 0) {
      this.#settled.add(conv.id);
      return Promise.resolve();
    }
    if (this.deps.running(conv.id)) return Promise.resolve();
    const sessionId = conv.session_id;
    const job = (async () => {
      try {
        agents.use(conv); // a replay needs the agent up
        const caps = await readyCapabilities(backend);
        if (!caps.loadHistory || !backend.loadHistory) return;
        const entries = await backend.loadHistory(sessionId, { cwd: agents.workdirOf(conv) });
        const added = store.importHistory(
          conv.id,
          entries.map((e) => {
            const ts = e.ts ? Date.parse(e.ts) : Number.NaN;
            return { role: e.role, text: e.text, ts: Number.isNaN(ts) ? null : ts };
          }),
        );
        log.debug({ conversation: conv.id, messages: added }, "transcript mirror refreshed from the agent");
      } catch (err) {
        log.debug({ err, conversation: conv.id }, "agent history replay failed; serving the mirror");
      } finally {
        this.#settled.add(conv.id);
        this.#running.delete(conv.id);
      }
    })();
    this.#running.set(conv.id, job);
    return job;
  }

  /** Resolves when no replay of the conversation is running. */
  async idle(conversationId: string): Promise<void> {
    await this.#running.get(conversationId);
  }
}
