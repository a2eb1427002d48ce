import type { ReasoningEffort } from "@pheby/protocol";
import type Database from "better-sqlite3";

/** Model and effort values of one scope; `null` means "not set here" (inherit). */
export interface ScopeSettings {
  model: string | null;
  provider: string | null;
  effort: ReasoningEffort | null;
}

const UNSET: ScopeSettings = { model: null, provider: null, effort: null };

/**
 * Persisted settings (migration v2): the global model/effort defaults and each
 * conversation's YOLO flag and overrides. Synchronous, like the rest of the store.
 */
export class SettingsStore {
  constructor(private readonly db: Database.Database) {}

  /** An agent's global defaults (all null when it has none). */
  global(agentId: string): ScopeSettings {
    const row = this.db
      .prepare("SELECT model, provider, effort FROM agent_settings WHERE agent_id = ?")
      .get(agentId) as ScopeSettings | undefined;
    return row ?? UNSET;
  }

  /** The global defaults stored before settings were per agent become `agentId`'s (once). */
  claimGlobal(agentId: string): void {
    this.db
      .prepare(
        "UPDATE agent_settings SET agent_id = ? WHERE agent_id = '' AND NOT EXISTS (SELECT 1 FROM agent_settings WHERE agent_id = ?)",
      )
      .run(agentId, agentId);
    this.db.prepare("DELETE FROM agent_settings WHERE agent_id = ''").run();
  }

  /** A conversation's overrides (all null when it has none). */
  conversation(conversationId: string): ScopeSettings {
    const row = this.db
      .prepare("SELECT model, provider, effort FROM conversation_settings WHERE conversation_id = ?")
      .get(conversationId) as ScopeSettings | undefined;
    return row ?? UNSET;
  }

  yolo(conversationId: string): boolean {
    const row = this.db
      .prepare("SELECT yolo FROM conversation_settings WHERE conversation_id = ?")
      .get(conversationId) as { yolo: number } | undefined;
    return row?.yolo === 1;
  }

  /** Switch YOLO; `deviceId` is the paired device that switched it on (null: the owner), kept while it stays on. */
  setYolo(conversationId: string, enabled: boolean, deviceId: string | null = null): void {
    this.#upsert(conversationId, "yolo = excluded.yolo, yolo_device_id = excluded.yolo_device_id", {
      yolo: enabled ? 1 : 0,
      yolo_device_id: enabled ? deviceId : null,
    });
  }

  /** Switch off the YOLO a device switched on (it was revoked); returns those conversations. */
  revokeYolo(deviceId: string): string[] {
    return this.db.transaction(() => {
      const ids = (
        this.db
          .prepare("SELECT conversation_id FROM conversation_settings WHERE yolo = 1 AND yolo_device_id = ?")
          .all(deviceId) as { conversation_id: string }[]
      ).map((r) => r.conversation_id);
      this.db
        .prepare("UPDATE conversation_settings SET yolo = 0, yolo_device_id = NULL WHERE yolo_device_id = ?")
        .run(deviceId);
      return ids;
    })();
  }

  /** Set the model of a scope (`conversationId` undefined: `agentId`'s global default). */
  setModel(
    conversationId: string | undefined,
    model: string,
    provider: string | null,
    agentId: string,
  ): void {
    if (conversationId === undefined) {
      this.#upsertGlobal(agentId, "model = excluded.model, provider = excluded.provider", {
        model,
        provider,
      });
    } else {
      this.#upsert(conversationId, "model = excluded.model, provider = excluded.provider", {
        model,
        provider,
      });
    }
  }

  /** Set the reasoning effort of a scope (`conversationId` undefined: `agentId`'s global default). */
  setEffort(conversationId: string | undefined, effort: ReasoningEffort, agentId: string): void {
    if (conversationId === undefined) {
      this.#upsertGlobal(agentId, "effort = excluded.effort", { effort });
    } else {
      this.#upsert(conversationId, "effort = excluded.effort", { effort });
    }
  }

  #upsertGlobal(agentId: string, assignments: string, values: Record<string, unknown>): void {
    this.db
      .prepare(
        `INSERT INTO agent_settings (agent_id, model, provider, effort) VALUES (@agent_id, @model, @provider, @effort)
         ON CONFLICT (agent_id) DO UPDATE SET ${assignments}`,
      )
      .run({ model: null, provider: null, effort: null, ...values, agent_id: agentId });
  }

  #upsert(conversationId: string, assignments: string, values: Record<string, unknown>): void {
    const row = {
      yolo: 0,
      yolo_device_id: null,
      model: null,
      provider: null,
      effort: null,
      ...values,
      conversation_id: conversationId,
    };
    this.db
      .prepare(
        `INSERT INTO conversation_settings (conversation_id, yolo, yolo_device_id, model, provider, effort)
         VALUES (@conversation_id, @yolo, @yolo_device_id, @model, @provider, @effort)
         ON CONFLICT (conversation_id) DO UPDATE SET ${assignments}`,
      )
      .run(row);
  }
}
