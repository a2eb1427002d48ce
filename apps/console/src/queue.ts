// Follow-ups waiting for the active run (the `queue` extension): what is queued, in order, each with
// a cancel button. When a queued run starts, its text becomes the user's bubble in the timeline.
import type { QueuedRun } from "@pheby/protocol";
import { h, replace } from "./dom.js";

export class QueueView {
  readonly el = h("ol", { class: "queue", "data-testid": "queue", "aria-label": "Queued messages" });
  /** Texts of runs seen queued, by run ID, until their run starts (the protocol sends no user-message event). */
  private readonly texts = new Map<string, string>();

  constructor(private readonly cancel: (runId: string) => void) {}

  /** The whole queue, next first (`queue.changed`, `conversation.history.queue`). */
  set(queued: readonly QueuedRun[]): void {
    for (const q of queued) this.texts.set(q.run_id, q.text);
    replace(
      this.el,
      ...queued.map((q) =>
        h(
          "li",
          { "data-testid": "queued", "data-run-id": q.run_id },
          h("span", { class: "queued-position" }, `${q.position}.`),
          h("span", { class: "queued-text" }, q.text),
          h(
            "button",
            {
              type: "button",
              class: "link",
              "data-testid": "cancel-queued",
              "aria-label": `Cancel queued message ${q.position}`,
              onclick: () => this.cancel(q.run_id),
            },
            "Cancel",
          ),
        ),
      ),
    );
  }

  /** The text of a queued run that is starting now (once), if this view saw it queued. */
  take(runId: string): string | undefined {
    const text = this.texts.get(runId);
    this.texts.delete(runId);
    return text;
  }

  clear(): void {
    this.texts.clear();
    replace(this.el);
  }
}
