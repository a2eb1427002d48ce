/**
 * What each of Pheby's agent tools does, in the conversation the call belongs to. The parts
 * that belong to the run engine (asking in the conversation's active run, an unsolicited
 * message, delivering a file) come in as {@link AgentToolDeps}; the schedule tools use the
 * scheduler directly, with the same rules as the phone's `schedule.*` requests.
 */
import type { ClarifyAnswer, ClarifyQuestion } from "../agent/port.js";
import { ScheduleError } from "../schedules/rules.js";
import type { Scheduler } from "../schedules/scheduler.js";
import { scheduleView } from "../schedules/view.js";
import { type ToolCall, ToolError, type ToolResult } from "./tool-server.js";

/** Default time `ask_user` waits for an answer: below Hermes's 300 s MCP tool-call timeout. */
export const DEFAULT_ASK_TIMEOUT_MS = 240_000;
/** A question expires this long before the agent's own tool-call timeout, so the answer reaches it. */
const TIMEOUT_MARGIN_MS = 15_000;
/** The shortest wait `ask_user` gives, whatever the agent's timeout. */
const MIN_ASK_MS = 5_000;

/** The run-engine side of the tools. Each throws {@link ToolError} for a refusal the agent should read. */
export interface AgentToolDeps {
  scheduler: Scheduler;
  /**
   * Ask the user in the conversation's active run (a `clarify.request`; it expires after
   * `question.expiresInMs`). Aborting `withdraw` withdraws the question. Throws a ToolError when
   * the conversation has no active run.
   */
  ask(conversationId: string, question: ClarifyQuestion, withdraw: AbortSignal): Promise<ClarifyAnswer>;
  /** An unsolicited assistant message in the conversation, recorded in history (and pushed where push exists). */
  notify(conversationId: string, title: string, body: string): void;
  /** Deliver a host file (allowed roots only) into the conversation; resolves with its name, or throws a ToolError. */
  sendFile(conversationId: string, path: string, caption: string | undefined): Promise<{ filename: string }>;
  /** How long `ask_user` waits at most (the operator's setting). */
  askTimeoutMs: number;
}

/** How long `ask_user` waits for an agent whose own tool-call timeout is `toolTimeoutMs` (if known). */
export function askTimeoutFor(askTimeoutMs: number, toolTimeoutMs: number | undefined): number {
  if (toolTimeoutMs === undefined) return askTimeoutMs;
  return Math.max(MIN_ASK_MS, Math.min(askTimeoutMs, toolTimeoutMs - TIMEOUT_MARGIN_MS));
}

/** The tool runner of the bridge: dispatches a checked call to its tool. */
export function agentTools(deps: AgentToolDeps): (call: ToolCall) => Promise<ToolResult> {
  return async (call) => {
    try {
      return await run(deps, call);
    } catch (err) {
      if (err instanceof ScheduleError) throw new ToolError(err.message);
      throw err;
    }
  };
}

const json = (value: unknown): ToolResult => ({ text: JSON.stringify(value) });

/** What `schedule_create` tells the agent: its schedule waits for the user. */
export const NOT_ACTIVE =
  "The schedule is saved but not active: it runs only after the user confirms it in Pheby. Tell the user it is waiting for their confirmation.";

async function run(deps: AgentToolDeps, call: ToolCall): Promise<ToolResult> {
  const { conversationId: conv, args } = call;
  switch (call.tool) {
    case "ask_user": {
      const expiresInMs = askTimeoutFor(deps.askTimeoutMs, call.toolTimeoutMs);
      const choices = (args.choices as string[] | undefined) ?? null;
      const question = { question: args.question as string, choices, allowFreeText: true, expiresInMs };
      const answer = await deps.ask(conv, question, call.signal);
      if (answer.outcome === "answered") return json({ answered: true, answer: answer.response });
      return json({
        answered: false,
        reason: answer.expired
          ? `No answer within ${Math.round(expiresInMs / 1000)} seconds.`
          : "The question was withdrawn: the user cancelled, or the answer ended.",
      });
    }
    case "schedule_create": {
      const row = deps.scheduler.create({
        conversationId: conv,
        prompt: args.prompt as string,
        cron: (args.cron as string | undefined) ?? null,
        at: (args.at as string | undefined) ?? null,
        timezone: (args.timezone as string | undefined) ?? null,
        name: (args.name as string | undefined) ?? null,
        createdBy: "agent",
      });
      return json({ schedule: scheduleView(row), active: false, note: NOT_ACTIVE });
    }
    case "schedule_list":
      return json(deps.scheduler.list(conv).map(scheduleView));
    case "schedule_delete": {
      const id = args.schedule_id as string;
      // Another conversation's schedule does not exist, as far as this conversation can tell.
      const row = deps.scheduler.list(conv).find((r) => r.id === id);
      if (!row) throw new ToolError("No such schedule in this conversation.");
      // The user's schedules are the user's: the agent removes only what it made itself.
      if (row.created_by !== "agent") {
        throw new ToolError("This schedule was made by the user: only the user can delete it, in Pheby.");
      }
      return json({ deleted: scheduleView(deps.scheduler.delete(id)) });
    }
    case "notify_user":
      deps.notify(conv, args.title as string, args.body as string);
      return json({ sent: true });
    case "send_file": {
      const { filename } = await deps.sendFile(conv, args.path as string, args.caption as string | undefined);
      return json({ delivered: true, filename });
    }
  }
}
