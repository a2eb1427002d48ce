// The message composer: text, up to 10 files with upload progress, send and stop; the agent's
// command palette over the text (the `modes` extension) and any extra controls beside the buttons.
import type { PhebyClient } from "@pheby/client";
import { LIMITS } from "@pheby/protocol";
import { formatBytes, h, replace } from "./dom.js";
import { type AgentCommand, CommandPalette } from "./modes.js";

/** What the composer needs from the app. */
export interface ComposerHost {
  client: PhebyClient;
  conversationId(): string | null;
  runId(): string | null;
  /** Show the user's message in the timeline (a queued one shows in the queue until it starts). */
  sent(text: string): void;
  report(message: string): void;
  /** Controls shown with the composer's buttons, before Send (the mode picker). */
  controls?: HTMLElement[];
}

export class Composer {
  readonly el: HTMLFormElement;
  private readonly text = h("textarea", {
    rows: 3,
    placeholder: "Message (Enter to send, Shift+Enter for a new line, / for commands)",
    "aria-label": "Message",
    "data-testid": "message",
    "aria-controls": "command-palette",
    "aria-autocomplete": "list",
  });
  private readonly palette = new CommandPalette((command) => this.insertCommand(command));
  private readonly files = h("input", {
    type: "file",
    multiple: true,
    "data-testid": "files",
    "aria-label": "Attach files",
  });
  private readonly uploads = h("ul", { class: "uploads", "data-testid": "uploads" });
  private readonly send = h("button", { type: "submit", class: "primary", "data-testid": "send" }, "Send");
  private readonly stop = h(
    "button",
    { type: "button", class: "danger", "data-testid": "stop", hidden: true },
    "Stop",
  );

  private busy = false;

  constructor(private readonly host: ComposerHost) {
    this.el = h(
      "form",
      { class: "composer" },
      this.uploads,
      this.palette.el,
      h(
        "div",
        { class: "row" },
        this.text,
        h("div", { class: "actions" }, this.files, ...(host.controls ?? []), this.send, this.stop),
      ),
    );
    this.el.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.submit();
    });
    this.text.addEventListener("input", () => this.paletteChanged());
    this.text.addEventListener("keydown", (event) => {
      if (this.palette.open && !event.isComposing && this.paletteKey(event)) {
        event.preventDefault();
        return;
      }
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.el.requestSubmit();
      }
    });
    this.files.addEventListener("change", () => this.listFiles());
    this.stop.addEventListener("click", () => void this.cancel());
  }

  /** The open conversation's slash commands (`commands.list`, `commands.snapshot`), for the palette. */
  setCommands(commands: readonly AgentCommand[]): void {
    this.palette.set(commands, this.text.value);
    this.paletteChanged();
  }

  /** The keys the palette takes while open; true when it took this one. */
  private paletteKey(event: KeyboardEvent): boolean {
    if (event.key === "ArrowDown") this.palette.move(1);
    else if (event.key === "ArrowUp") this.palette.move(-1);
    else if (event.key === "Escape") this.palette.dismiss();
    else if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") this.palette.pick();
    else return false;
    this.paletteChanged(false);
    return true;
  }

  /** Filter the palette by the text (unless `refilter` is false) and point the message box at its highlight. */
  private paletteChanged(refilter = true): void {
    if (refilter) this.palette.update(this.text.value);
    this.text.setAttribute("aria-expanded", String(this.palette.open));
    const active = this.palette.activeId;
    if (active) this.text.setAttribute("aria-activedescendant", active);
    else this.text.removeAttribute("aria-activedescendant");
  }

  /** A command was chosen: the message becomes `/name `, ready for its arguments. */
  private insertCommand(command: AgentCommand): void {
    this.text.value = `/${command.name} `;
    this.text.focus();
    this.text.setSelectionRange(this.text.value.length, this.text.value.length);
    this.paletteChanged();
  }

  /** Show the stop button while a run is active. */
  setRun(runId: string | null): void {
    this.stop.hidden = runId === null;
  }

  private chosen(): File[] {
    return [...(this.files.files ?? [])];
  }

  private listFiles(): void {
    const files = this.chosen();
    const tooMany = files.length > LIMITS.attachmentsPerSend;
    const tooBig = files.filter((f) => f.size > LIMITS.uploadBytes);
    replace(
      this.uploads,
      ...files.map((f) =>
        h("li", {}, `${f.name} (${formatBytes(f.size)}) `, h("progress", { max: f.size || 1, value: 0 })),
      ),
      tooMany ? h("li", { class: "error" }, `At most ${LIMITS.attachmentsPerSend} files per message.`) : null,
      ...tooBig.map((f) => h("li", { class: "error" }, `${f.name} is over the 64 MiB upload limit.`)),
    );
    this.send.disabled = tooMany || tooBig.length > 0;
  }

  private async submit(): Promise<void> {
    const conversationId = this.host.conversationId();
    if (!conversationId) return;
    const files = this.chosen();
    if (this.busy || this.send.disabled) return;
    let text = this.text.value.trim();
    if (!text && files.length === 0) return;
    // The protocol requires a non-blank text: caption file-only sends.
    if (!text) text = files.length === 1 ? files[0]!.name : `${files.length} files`;
    this.busy = true;
    this.send.disabled = true;
    try {
      const ids: string[] = [];
      const bars = [...this.uploads.querySelectorAll("progress")];
      for (const [i, file] of files.entries()) {
        const descriptor = await this.host.client.upload(conversationId, file, {
          filename: file.name,
          contentType: file.type || "application/octet-stream",
          onProgress: (done) => {
            if (bars[i]) bars[i].value = done;
          },
        });
        if (bars[i]) bars[i].value = file.size;
        ids.push(descriptor.attachment_id);
      }
      // Sent during a run, it waits its turn (run.queued) instead of being refused.
      const reply = await this.host.client.request({
        type: "chat.send",
        conversation_id: conversationId,
        text,
        queue: true,
        ...(ids.length ? { attachment_ids: ids } : {}),
      });
      if (reply.type === "run.accepted") this.host.sent(text);
      this.text.value = "";
      this.paletteChanged();
      this.files.value = "";
      replace(this.uploads);
    } catch (err) {
      this.host.report(`Not sent: ${(err as Error).message}`);
    } finally {
      this.busy = false;
      this.send.disabled = false;
    }
  }

  private async cancel(): Promise<void> {
    const conversationId = this.host.conversationId();
    const runId = this.host.runId();
    if (!conversationId || !runId) return;
    try {
      await this.host.client.request({ type: "run.cancel", conversation_id: conversationId, run_id: runId });
    } catch (err) {
      this.host.report(`Stop failed: ${(err as Error).message}`);
    }
  }
}
