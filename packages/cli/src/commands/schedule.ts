import { FEATURE_SCHEDULES, type Schedule } from "@pheby/protocol";
import { type Command, EXIT, required } from "../command.js";
import { UsageError } from "../exit.js";
import { type Io, writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

/**
 * One schedule as a line: ID, when it runs (next run), its trigger, its name or prompt; an agent's
 * schedule awaiting confirmation says so (`pheby schedule confirm ID`), an auto-approving one too.
 */
function line(io: Io, s: Schedule): void {
  const when = s.cron ? `cron "${s.cron}" ${s.timezone}` : `at ${s.at}`;
  const next = !s.confirmed
    ? "unconfirmed (made by the agent)"
    : s.enabled
      ? (s.next_run_at ?? "-")
      : "disabled";
  const last = s.last_status ? `  last ${s.last_status} ${s.last_run_at}` : "";
  const auto = s.auto_approve ? "  [auto-approve]" : "";
  writeLine(io, `${s.schedule_id}  ${next}  ${when}  ${s.name ?? s.prompt.split("\n")[0]}${last}${auto}`);
}

export const schedule: Command = {
  name: "schedule",
  usage:
    "[list [conversation] | add <conversation> (--cron EXPR | --at TIME) <prompt…> | confirm <schedule> | rm <schedule>]",
  summary:
    "List, add and remove scheduled prompts (the schedules extension): the server sends the prompt in the conversation when it is due, as a run nobody asked for.",
  details: [
    '  --cron EXPR      repeat: five fields, minute hour day-of-month month day-of-week (e.g. "0 8 * * 1-5")',
    "  --at TIME        once: ISO-8601 with an offset (e.g. 2026-12-24T08:00:00+01:00)",
    "  --timezone Z     IANA time zone the cron expression is read in (default: the server's)",
    "  --name N         a name to show instead of the prompt",
    "  --auto-approve   let YOLO approve its runs' permission questions (master secret only)",
    "  confirm ID       confirm (and enable) a schedule the agent made: it runs only once confirmed",
  ],
  options: {
    cron: { type: "string" },
    at: { type: "string" },
    timezone: { type: "string" },
    name: { type: "string" },
    "auto-approve": { type: "boolean" },
  },
  examples: [
    "pheby schedule",
    'pheby schedule add "Inbox" --cron "0 8 * * 1-5" --timezone Europe/Paris Summarise my inbox',
    'pheby schedule add "Trip planning" --at 2026-12-24T08:00:00+01:00 "Remind me to pack"',
    "pheby schedule confirm 3d4e5f6070a1b2c3d4e5f60718293a4b",
    "pheby schedule rm 3d4e5f6070a1b2c3d4e5f60718293a4b",
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "list", ...rest] = positionals;
    const json = flags.json === true;
    const client = await connect({ features: [FEATURE_SCHEDULES] });
    if (!client.features.includes(FEATURE_SCHEDULES)) {
      throw new Error("this server does not support schedules (the schedules extension)");
    }
    switch (action) {
      case "list": {
        const conversation = rest[0];
        const conversation_id = conversation ? await resolveConversation(client, conversation) : undefined;
        const { schedules } = await client.request({
          type: "schedule.list",
          ...(conversation_id ? { conversation_id } : {}),
        });
        if (json) for (const s of schedules) writeJson(io, s);
        else if (schedules.length === 0) writeLine(io, "No schedules.");
        else for (const s of schedules) line(io, s);
        return EXIT.ok;
      }
      case "add": {
        const conversation_id = await resolveConversation(client, required(rest, 0, "<conversation>"));
        const prompt = rest.slice(1).join(" ").trim();
        if (!prompt) throw new UsageError("missing <prompt>");
        const cron = flags.cron as string | undefined;
        const at = flags.at as string | undefined;
        if ((cron === undefined) === (at === undefined)) throw new UsageError("give either --cron or --at");
        const timezone = flags.timezone as string | undefined;
        const name = flags.name as string | undefined;
        const { schedule: created } = await client.request({
          type: "schedule.create",
          conversation_id,
          prompt,
          ...(cron !== undefined ? { cron } : { at: at! }),
          ...(timezone ? { timezone } : {}),
          ...(name ? { name } : {}),
          ...(flags["auto-approve"] === true ? { auto_approve: true } : {}),
        });
        if (json) writeJson(io, created);
        else line(io, created);
        return EXIT.ok;
      }
      case "confirm": {
        const confirmed = await client.confirmSchedule(required(rest, 0, "<schedule>"));
        if (json) writeJson(io, confirmed);
        else line(io, confirmed);
        return EXIT.ok;
      }
      case "rm": {
        const schedule_id = required(rest, 0, "<schedule>");
        const { schedule: removed } = await client.request({ type: "schedule.delete", schedule_id });
        if (json) writeJson(io, { schedule_id: removed.schedule_id, deleted: true });
        else writeLine(io, `deleted ${removed.schedule_id}`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown action "${action}" (list, add, confirm, rm)`);
    }
  },
};
