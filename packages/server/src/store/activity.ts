import type { ContextUsage, PlanEntry } from "@pheby/protocol";
import type Database from "better-sqlite3";

/**
 * Migration step (the `activity` extension): each conversation's latest agent plan and context usage,
 * so `conversation.history` shows the plan after a restart. One row per conversation, written on every
 * `plan.updated` / `usage.updated`; NULL means the agent reported none.
 */
export const ACTIVITY_MIGRATION = `
  CREATE TABLE conversation_activity (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id),
    plan_json       TEXT,  -- the latest plan's entries (JSON array), as plan.updated sent them
    usage_json      TEXT   -- the latest usage {used, size, cost}, as usage.updated sent it
  );
`;

/** Each conversation's latest plan and usage, as the agent last reported them (see {@link ACTIVITY_MIGRATION}). */
export class ActivityStore {
  readonly #get: Database.Statement<[string], { plan_json: string | null; usage_json: string | null }>;
  readonly #setPlan: Database.Statement<[string, string]>;
  readonly #setUsage: Database.Statement<[string, string]>;
  readonly #forget: Database.Statement<[string]>;

  constructor(db: Database.Database) {
    this.#get = db.prepare(
      "SELECT plan_json, usage_json FROM conversation_activity WHERE conversation_id = ?",
    );
    this.#setPlan = db.prepare(
      `INSERT INTO conversation_activity (conversation_id, plan_json) VALUES (?, ?)
       ON CONFLICT (conversation_id) DO UPDATE SET plan_json = excluded.plan_json`,
    );
    this.#setUsage = db.prepare(
      `INSERT INTO conversation_activity (conversation_id, usage_json) VALUES (?, ?)
       ON CONFLICT (conversation_id) DO UPDATE SET usage_json = excluded.usage_json`,
    );
    this.#forget = db.prepare("DELETE FROM conversation_activity WHERE conversation_id = ?");
  }

  /** The conversation's latest plan, or null when the agent never reported one. */
  plan(conversationId: string): PlanEntry[] | null {
    const json = this.#get.get(conversationId)?.plan_json;
    return json == null ? null : (JSON.parse(json) as PlanEntry[]);
  }

  /** The conversation's latest usage, or null. */
  usage(conversationId: string): ContextUsage | null {
    const json = this.#get.get(conversationId)?.usage_json;
    return json == null ? null : (JSON.parse(json) as ContextUsage);
  }

  setPlan(conversationId: string, entries: readonly PlanEntry[]): void {
    this.#setPlan.run(conversationId, JSON.stringify(entries));
  }

  setUsage(conversationId: string, usage: ContextUsage): void {
    this.#setUsage.run(conversationId, JSON.stringify(usage));
  }

  /** The conversation was deleted: its plan (agent text about the user's work) goes with it. */
  forget(conversationId: string): void {
    this.#forget.run(conversationId);
  }
}
