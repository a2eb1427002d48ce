// The conversation list: create, rename, delete, and live updates from other
// clients (conversation.updated / renamed / deleted broadcasts).
import { confirmOnSecondClick, h, replace } from "./dom.js";

/** What the list asks the app to do. */
export interface ConversationActions {
  open(conversationId: string): void;
  create(): Promise<void>;
  rename(conversationId: string, name: string): Promise<void>;
  remove(conversationId: string): Promise<void>;
}

export class ConversationList {
  readonly el = h("nav", { class: "conversations", "aria-label": "Conversations" });
  private readonly list = h("ul", { "data-testid": "conversation-list" });
  private readonly names = new Map<string, string>();
  private selected: string | null = null;

  constructor(private readonly actions: ConversationActions) {
    this.el.append(
      h(
        "button",
        {
          type: "button",
          class: "primary",
          "data-testid": "new-conversation",
          onclick: () => void actions.create(),
        },
        "New conversation",
      ),
      this.list,
    );
  }

  /** Replace the list (conversation.snapshot). */
  setAll(conversations: { conversation_id: string; name: string }[]): void {
    this.names.clear();
    for (const c of conversations) this.names.set(c.conversation_id, c.name);
    this.render();
  }

  /** Add or rename one (created / updated / renamed). */
  upsert(conversationId: string, name: string): void {
    this.names.set(conversationId, name);
    this.render();
  }

  remove(conversationId: string): void {
    this.names.delete(conversationId);
    if (this.selected === conversationId) this.selected = null;
    this.render();
  }

  has(conversationId: string): boolean {
    return this.names.has(conversationId);
  }

  name(conversationId: string): string {
    return this.names.get(conversationId) ?? "";
  }

  select(conversationId: string | null): void {
    this.selected = conversationId;
    this.render();
  }

  private render(): void {
    replace(this.list, ...[...this.names].map(([id, name]) => this.row(id, name)));
  }

  private row(id: string, name: string): HTMLElement {
    const li = h("li", { "data-conversation-id": id, class: id === this.selected ? "selected" : "" });
    const open = h("button", { type: "button", class: "open", onclick: () => this.actions.open(id) }, name);
    const rename = h(
      "button",
      { type: "button", class: "icon", title: "Rename", "aria-label": "Rename" },
      "✎",
    );
    const del = h("button", { type: "button", class: "icon", title: "Delete", "aria-label": "Delete" }, "×");
    rename.addEventListener("click", () => {
      const input = h("input", { type: "text", value: name, maxlength: 200, "aria-label": "New name" });
      const form = h("form", { class: "rename" }, input);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const next = input.value.trim();
        if (next && next !== name) void this.actions.rename(id, next);
        else this.render();
      });
      input.addEventListener("keydown", (event) => event.key === "Escape" && this.render());
      replace(li, form);
      input.focus();
      input.select();
    });
    confirmOnSecondClick(del, "Delete?", () => void this.actions.remove(id));
    li.append(open, rename, del);
    return li;
  }
}
