// The open conversation's scheduled prompts (the `schedules` extension): what is scheduled, when it
// runs next and how its last run went; add one (repeating with cron, or once at a time), delete
// one, confirm one the agent made (it waits, disabled, until the user does). Hidden when the server does not enable the extension.
import type { PhebyClient } from "@pheby/client";
import { FEATURE_SCHEDULES, type Schedule } from "@pheby/protocol";
import { h, replace } from "./dom.js";

export class SchedulesPanel {
  readonly el = h("details", { class: "schedules", "data-testid": "schedules" });
  private readonly summary = h("summary", {}, "Schedules");
  private readonly list = h("ul", { "data-testid": "schedule-list" });
  private readonly prompt = h("input", {
    type: "text",
    placeholder: "Prompt to send",
    "aria-label": "Scheduled prompt",
    "data-testid": "schedule-prompt",
    maxlength: 64000,
  });
  private readonly kind = h(
    "select",
    { "aria-label": "Repeat or once", "data-testid": "schedule-kind" },
    h("option", { value: "cron" }, "Repeat (cron)"),
    h("option", { value: "at" }, "Once at"),
  );
  private readonly cron = h("input", {
    type: "text",
    placeholder: "0 8 * * 1-5",
    "aria-label": "Cron expression",
    "data-testid": "schedule-cron",
  });
  private readonly at = h("input", {
    type: "datetime-local",
    step: 1,
    "aria-label": "Time",
    "data-testid": "schedule-at",
    hidden: true,
  });
  private readonly schedules = new Map<string, Schedule>();
  private conversationId: string | null = null;

  constructor(
    private readonly client: PhebyClient,
    private readonly report: (message: string) => void,
  ) {
    const form = h(
      "form",
      {
        class: "schedule-form",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void this.add();
        },
      },
      this.prompt,
      this.kind,
      this.cron,
      this.at,
      h("button", { type: "submit", "data-testid": "schedule-add" }, "Schedule"),
    );
    this.kind.addEventListener("change", () => {
      this.cron.hidden = this.kind.value !== "cron";
      this.at.hidden = this.kind.value !== "at";
    });
    this.el.append(this.summary, this.list, form);
    this.el.hidden = true;
  }

  /** Show the schedules of a conversation (on open and after every reconnect). */
  async load(conversationId: string | null): Promise<void> {
    this.conversationId = conversationId;
    this.schedules.clear();
    this.el.hidden = conversationId === null || !this.client.features.includes(FEATURE_SCHEDULES);
    if (this.el.hidden || !conversationId) return this.render();
    try {
      const { schedules } = await this.client.request({
        type: "schedule.list",
        conversation_id: conversationId,
      });
      if (this.conversationId !== conversationId) return;
      for (const s of schedules) this.schedules.set(s.schedule_id, s);
    } catch (err) {
      this.report(`Could not list schedules: ${(err as Error).message}`);
    }
    this.render();
  }

  /** A `schedule.changed` (another device, the agent, a run ending). */
  changed(schedule: Schedule, deleted: boolean): void {
    if (schedule.conversation_id !== this.conversationId) return;
    if (deleted) this.schedules.delete(schedule.schedule_id);
    else this.schedules.set(schedule.schedule_id, schedule);
    this.render();
  }

  private async add(): Promise<void> {
    const conversation_id = this.conversationId;
    const prompt = this.prompt.value.trim();
    if (!conversation_id || !prompt) return;
    // A datetime-local value is the browser's local time: send it with this device's offset.
    const when =
      this.kind.value === "cron"
        ? {
            cron: this.cron.value.trim(),
            timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
          }
        : { at: new Date(this.at.value).toISOString() };
    try {
      const { schedule } = await this.client.request({
        type: "schedule.create",
        conversation_id,
        prompt,
        ...when,
      });
      this.prompt.value = "";
      this.changed(schedule, false);
    } catch (err) {
      this.report(`Could not schedule: ${(err as Error).message}`);
    }
  }

  private async remove(id: string): Promise<void> {
    try {
      // The reply is a schedule.changed, which @pheby/client also hands to on() handlers: main.ts's
      // applies it (add's reply, schedule.created, reaches no such handler, so add applies its own).
      await this.client.request({ type: "schedule.delete", schedule_id: id });
    } catch (err) {
      this.report(`Could not delete the schedule: ${(err as Error).message}`);
    }
  }

  /** Confirm an agent's schedule: enabling it is the confirmation; until then it never runs. */
  private async confirm(id: string): Promise<void> {
    try {
      this.changed(await this.client.confirmSchedule(id), false);
    } catch (err) {
      this.report(`Could not confirm the schedule: ${(err as Error).message}`);
    }
  }

  private render(): void {
    this.summary.textContent = `Schedules (${this.schedules.size})`;
    replace(
      this.list,
      ...[...this.schedules.values()].map((s) =>
        h(
          "li",
          {
            "data-schedule-id": s.schedule_id,
            "data-enabled": String(s.enabled),
            "data-confirmed": String(s.confirmed !== false),
          },
          h("b", {}, s.name ?? s.prompt),
          " · ",
          s.cron ? `cron ${s.cron} (${s.timezone})` : `once at ${new Date(s.at!).toLocaleString()}`,
          " · ",
          h(
            "span",
            { class: "next" },
            s.enabled && s.next_run_at ? `next ${new Date(s.next_run_at).toLocaleString()}` : "done",
          ),
          s.last_status
            ? h("span", { class: "last", "data-status": s.last_status }, ` · last ${s.last_status}`)
            : null,
          s.confirmed === false
            ? h(
                "span",
                { class: "unconfirmed", "data-testid": "schedule-unconfirmed" },
                h("span", {}, "Made by the agent, not active until you confirm."),
                h(
                  "button",
                  {
                    type: "button",
                    "data-testid": "schedule-confirm",
                    onclick: () => void this.confirm(s.schedule_id),
                  },
                  "Confirm",
                ),
              )
            : null,
          " ",
          h(
            "button",
            {
              type: "button",
              class: "link",
              "aria-label": "Delete schedule",
              onclick: () => void this.remove(s.schedule_id),
            },
            "×",
          ),
        ),
      ),
    );
  }
}
