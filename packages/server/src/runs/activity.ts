import {
  type ContextUsage,
  LIMITS,
  PLAN_ENTRY_PRIORITIES,
  PLAN_ENTRY_STATUSES,
  type PlanEntry,
} from "@pheby/protocol";
import { eventOf, type Outbox } from "../outbox/outbox.js";
import type { Store } from "../store/store.js";
import { type Clock, iso } from "../util/time.js";
import { firstChars } from "./thoughts.js";

/**
 * The agent's plan and context usage (the `activity` extension): whatever an agent reports is bounded
 * to what the protocol allows, kept as the conversation's latest (persisted, so the plan survives a
 * restart) and published as `plan.updated` / `usage.updated`, events of the conversation (the Fanout
 * sends them to `activity` connections only; with `resume` they get a `seq` and enter the replay log).
 */
export class AgentActivity {
  constructor(private readonly deps: { store: Store; outbox: Outbox; clock: Clock }) {}

  /** A new plan of the conversation, replacing the previous one; `runId` null outside a run. */
  plan(conversationId: string, runId: string | null, entries: readonly PlanEntry[]): void {
    const bounded = boundedPlan(entries);
    this.deps.store.activity.setPlan(conversationId, bounded);
    this.deps.outbox.publish(
      eventOf({
        type: "plan.updated",
        conversation_id: conversationId,
        run_id: runId,
        entries: bounded,
        ts: iso(this.deps.clock.now()),
      }),
    );
  }

  /** New context usage of the conversation's agent session. */
  usage(conversationId: string, usage: ContextUsage): void {
    const bounded = boundedUsage(usage);
    this.deps.store.activity.setUsage(conversationId, bounded);
    this.deps.outbox.publish(
      eventOf({
        type: "usage.updated",
        conversation_id: conversationId,
        ...bounded,
        ts: iso(this.deps.clock.now()),
      }),
    );
  }

  /** The conversation's latest plan, or null (`conversation.history.plan`). */
  latestPlan(conversationId: string): PlanEntry[] | null {
    return this.deps.store.activity.plan(conversationId);
  }

  /** The conversation's latest usage, or null (`conversation.history.usage`). */
  latestUsage(conversationId: string): ContextUsage | null {
    return this.deps.store.activity.usage(conversationId);
  }
}

/**
 * A plan as the protocol bounds it: its first 100 entries, each `content` cut to 2,000 characters; a
 * status or priority the protocol does not know (an agent's own) becomes `pending` / `medium`.
 */
export function boundedPlan(entries: readonly PlanEntry[]): PlanEntry[] {
  const known = <T extends string>(values: readonly T[], value: unknown, fallback: T): T =>
    values.includes(value as T) ? (value as T) : fallback;
  return (Array.isArray(entries) ? entries : []).slice(0, LIMITS.planEntries).map((entry) => ({
    content: firstChars(typeof entry?.content === "string" ? entry.content : "", LIMITS.planEntryChars).text,
    status: known(PLAN_ENTRY_STATUSES, entry?.status, "pending"),
    priority: known(PLAN_ENTRY_PRIORITIES, entry?.priority, "medium"),
  }));
}

/** Usage as the protocol bounds it: whole non-negative token counts; a cost only when it is one. */
export function boundedUsage(usage: ContextUsage): ContextUsage {
  const tokens = (n: unknown) =>
    typeof n === "number" && Number.isFinite(n)
      ? Math.min(Math.max(0, Math.round(n)), Number.MAX_SAFE_INTEGER)
      : 0;
  const cost = usage?.cost;
  const valid =
    cost != null &&
    typeof cost.amount === "number" &&
    Number.isFinite(cost.amount) &&
    cost.amount >= 0 &&
    typeof cost.currency === "string" &&
    cost.currency.length > 0;
  return {
    used: tokens(usage?.used),
    size: tokens(usage?.size),
    cost: valid
      ? { amount: cost.amount, currency: firstChars(cost.currency, LIMITS.currencyChars).text }
      : null,
  };
}
