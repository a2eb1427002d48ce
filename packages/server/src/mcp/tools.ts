/**
 * The tools of Pheby's MCP server: their names, argument schemas (which the MCP SDK both
 * describes to the agent and checks each call against, inside Pheby) and descriptions.
 */
import { z } from "zod/v3";
import { MAX_NAME_CHARS, MAX_PROMPT_CHARS } from "../schedules/limits.js";

/** Every tool Pheby can offer an agent. */
export const AGENT_TOOL_NAMES = [
  "ask_user",
  "schedule_create",
  "schedule_list",
  "schedule_delete",
  "notify_user",
  "send_file",
] as const;

/** The name of one of Pheby's agent tools. */
export type AgentToolName = (typeof AGENT_TOOL_NAMES)[number];

const text = (max: number) => z.string().min(1).max(max);

/** Input shapes (zod/v3 raw shapes, as the MCP SDK's `registerTool` takes them). */
export const TOOL_INPUTS = {
  ask_user: {
    question: text(4_000).describe("The question, as the user will read it."),
    choices: z
      .array(text(200))
      .min(1)
      .max(10)
      .optional()
      .describe("Answers to offer as buttons. The user may still type their own answer."),
  },
  schedule_create: {
    prompt: text(MAX_PROMPT_CHARS).describe(
      "The message Pheby will send you in this conversation when the schedule is due.",
    ),
    cron: z
      .string()
      .optional()
      .describe(
        "Repeat: a five-field cron expression (minute hour day-of-month month day-of-week), e.g. '0 8 * * 1-5' for weekdays at 08:00. Give cron or at, not both.",
      ),
    at: z
      .string()
      .optional()
      .describe("Once: an ISO-8601 date-time with an offset, e.g. '2026-12-24T08:00:00+01:00'."),
    timezone: z
      .string()
      .optional()
      .describe(
        "IANA time zone the cron expression is read in, e.g. 'Europe/Berlin'. Default: the server's.",
      ),
    name: text(MAX_NAME_CHARS).optional().describe("A short name the user sees in their list of schedules."),
  },
  schedule_list: {},
  schedule_delete: {
    schedule_id: z.string().min(1).max(64).describe("The schedule_id schedule_list or schedule_create gave."),
  },
  notify_user: {
    title: text(200).describe("A short title (also the phone notification's title)."),
    body: text(MAX_PROMPT_CHARS).describe("The message."),
  },
  send_file: {
    path: z.string().min(1).max(4_096).describe("Absolute path of the file on this machine."),
    caption: text(4_000).optional().describe("A line of text to go with the file."),
  },
} as const satisfies Record<AgentToolName, z.ZodRawShape>;

/** What each tool does, as the agent's model reads it. */
export function toolDescription(
  name: AgentToolName,
  env: { askTimeoutSeconds: number; timezone: string },
): string {
  switch (name) {
    case "ask_user":
      return `Ask the user a question on their phone and wait for the answer. Use it when you need a decision or information only the user has. Returns JSON: {"answered": true, "answer": "…"}, or {"answered": false, "reason": "…"} when nobody answered within ${env.askTimeoutSeconds} seconds (then carry on without it, or ask again later).`;
    case "schedule_create":
      return `Schedule a prompt for later in this conversation: repeating (cron) or once (at). When it is due, Pheby sends the prompt to you as a new message and the user sees your answer, even when you were not asked anything. Times are read in the time zone given, default ${env.timezone}. The schedule does not run until the user confirms it in Pheby. Returns JSON: {"schedule": {…}, "active": false, "note": "…"}.`;
    case "schedule_list":
      return "List this conversation's schedules (JSON), with when each runs next and how its last run went.";
    case "schedule_delete":
      return "Delete one of this conversation's schedules that you created (the user's own schedules are theirs to delete).";
    case "notify_user":
      return "Send the user a message in this conversation right now, outside your answer: it is kept in the conversation's history and notifies their phone where notifications are on. Use it for results or progress they should not miss.";
    case "send_file":
      return "Send a file from this machine to the user's phone. The path must be absolute and inside the directories Pheby is allowed to deliver from.";
  }
}
