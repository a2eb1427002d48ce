// The message composer: text, up to 10 files with upload progress, send and stop.
import type { PhebyClient } from "@pheby/client";
import { LIMITS } from "@pheby/protocol";
import { formatBytes, h, replace } from "./dom.js";

/** What the composer needs from the app. */
export interface ComposerHost {
  client: PhebyClient;
  conversationId(): string | null;
  runId(): string | null;
  /** Show the user's message in the timeline (a queued one shows in the queue until it starts). */
  sent(text: string): void;
  report(message: string): void;
}

export class Composer {
  readonly el: HTMLFormElement;
  private readonly text = h("textarea", {
    rows: 3,
    placeholder: "Message (Enter to send, Shift+Enter for a new line)",
    "aria-label": "Message",
    "data-testid": "message",
  });
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
      h("div", { class: "row" }, this.text, h("div", { class: "actions" }, this.files, this.send, this.stop)),
    );
    this.el.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.submit();
    });
    this.text.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.el.requestSubmit();
      }
    });
    this.files.addEventListener("change", () => this.listFiles());
    this.stop.addEventListener("click", () => void this.cancel());
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
