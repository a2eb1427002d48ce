// Per-conversation settings: model, reasoning effort and YOLO. Each control is
// hidden, with the server's reason, when the agent or server does not offer it.
import type { PhebyClient } from "@pheby/client";
import type { ServerMessageOf } from "@pheby/protocol";
import { h, replace } from "./dom.js";

export class SettingsBar {
  readonly el = h("div", { class: "settings", "data-testid": "settings" });
  private readonly model = h("select", { "aria-label": "Model", "data-testid": "model" });
  private readonly effort = h("select", { "aria-label": "Reasoning effort", "data-testid": "reasoning" });
  private readonly yolo = h("input", { type: "checkbox", "data-testid": "yolo" });
  private readonly note = h("span", { class: "note" });
  private conversationId: string | null = null;

  constructor(
    private readonly client: PhebyClient,
    private readonly report: (message: string) => void,
  ) {
    this.el.append(
      h("label", {}, "Model ", this.model),
      h("label", {}, "Reasoning ", this.effort),
      h("label", { title: "Auto-approve this conversation's tool permissions" }, this.yolo, " YOLO"),
      this.note,
    );
    this.model.addEventListener("change", () => {
      const [provider, model] = JSON.parse(this.model.value) as [string, string];
      this.set({ type: "model.set", model, provider });
    });
    this.effort.addEventListener("change", () =>
      this.set({ type: "reasoning.set", effort: this.effort.value }),
    );
    this.yolo.addEventListener("change", () => this.set({ type: "yolo.set", enabled: this.yolo.checked }));
  }

  /** Load the settings of a conversation (on open and after every reconnect). */
  async load(conversationId: string | null): Promise<void> {
    this.conversationId = conversationId;
    this.el.hidden = conversationId === null;
    if (!conversationId) return;
    const c = this.client;
    const missing: string[] = [];
    const attempt = async <T>(
      what: string,
      control: HTMLElement,
      get: () => Promise<T>,
      apply: (v: T) => void,
    ) => {
      try {
        apply(await get());
        control.closest("label")!.hidden = false;
      } catch (err) {
        control.closest("label")!.hidden = true;
        missing.push(`${what}: ${(err as { code?: string }).code ?? "error"}`);
      }
    };
    await attempt(
      "models",
      this.model,
      () => c.request({ type: "models.list", conversation_id: conversationId }),
      (m) => this.showModels(m),
    );
    await attempt(
      "reasoning",
      this.effort,
      () => c.request({ type: "reasoning.current", conversation_id: conversationId }),
      (r) => this.showEffort(r.supported_efforts, r.enabled ? r.effort : "none"),
    );
    await attempt(
      "yolo",
      this.yolo,
      () => c.request({ type: "yolo.current", conversation_id: conversationId }),
      (y) => {
        this.yolo.checked = y.enabled;
      },
    );
    this.note.textContent = missing.length ? `Not available — ${missing.join(", ")}` : "";
  }

  /** Apply a broadcast change if it concerns this conversation (or the global default). */
  changed(
    m:
      | ServerMessageOf<"model.changed">
      | ServerMessageOf<"reasoning.changed">
      | ServerMessageOf<"yolo.changed">,
  ): void {
    if (!this.conversationId) return;
    if (m.scope === "conversation" && m.conversation_id !== this.conversationId) return;
    if (m.type === "yolo.changed") this.yolo.checked = m.enabled;
    else void this.load(this.conversationId);
  }

  private showModels(m: ServerMessageOf<"models.snapshot">): void {
    const groups = m.providers.map((p) =>
      h(
        "optgroup",
        { label: p.name },
        ...p.models.map((model) =>
          h(
            "option",
            {
              value: JSON.stringify([p.slug, model]),
              selected: model === m.current_model && p.slug === (m.current_provider ?? p.slug),
            },
            model,
          ),
        ),
      ),
    );
    replace(this.model, ...groups);
  }

  private showEffort(efforts: readonly string[], current: string | null): void {
    replace(
      this.effort,
      ...(current === null ? [h("option", { value: "", selected: true, disabled: true }, "default")] : []),
      ...efforts.map((e) => h("option", { value: e, selected: e === current }, e)),
    );
  }

  private set(
    m:
      | { type: "model.set"; model: string; provider: string }
      | { type: "reasoning.set"; effort: string }
      | { type: "yolo.set"; enabled: boolean },
  ): void {
    const conversation_id = this.conversationId;
    if (!conversation_id) return;
    this.client.request({ ...m, conversation_id } as never).catch((err: Error) => {
      this.report(`Could not change the setting: ${err.message}`);
      void this.load(conversation_id);
    });
  }
}
