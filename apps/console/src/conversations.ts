// The conversation list: create, rename, delete, and live updates from other
// clients (conversation.updated / renamed / deleted broadcasts). With `workspaces`, each row also
// says which agent works in which workspace (and on which worktree branch).
import { confirmOnSecondClick, h, replace } from "./dom.js";
import { type InboxState, type InboxView, inboxDetails, inView } from "./inbox.js";
import type { Placement } from "./workspaces.js";

/** What the list asks the app to do. */
export interface ConversationActions {
  open(conversationId: string): void;
  create(): Promise<void>;
  rename(conversationId: string, name: string): Promise<void>;
  remove(conversationId: string): Promise<void>;
  /** Archive or unarchive (the `inbox` extension; offered only when rows carry its state). */
  archive(conversationId: string, archived: boolean): Promise<void>;
  /** `workspaces`: a row's "agent · workspace · branch" line (null: nothing worth a line). */
  placement(placement: Placement): HTMLElement | null;
}

export class ConversationList {
  readonly el = h("nav", { class: "conversations", "aria-label": "Conversations" });
  private readonly list = h("ul", { "data-testid": "conversation-list" });
  private readonly names = new Map<string, string>();
  /** `inbox`: each conversation's list state, when the server sends it. */
  private readonly states = new Map<string, InboxState>();
  /** `workspaces`: where each conversation works, when the server says. */
  private readonly placements = new Map<string, Placement>();
  private view: InboxView = "all";
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

  /** Replace the list (conversation.snapshot), with each entry's `inbox` state and `workspaces` placement. */
  setAll(
    conversations: { conversation_id: string; name: string }[],
    states?: Map<string, InboxState>,
    placements?: Map<string, Placement>,
  ): void {
    this.names.clear();
    this.states.clear();
    this.placements.clear();
    for (const c of conversations) this.names.set(c.conversation_id, c.name);
    for (const [id, state] of states ?? []) this.states.set(id, state);
    for (const [id, placement] of placements ?? []) this.placements.set(id, placement);
    this.render();
  }

  /**
   * Add or rename one (created / updated / renamed), with its `inbox` state and `workspaces`
   * placement when it carries them.
   */
  upsert(conversationId: string, name: string, state?: InboxState, placement?: Placement): void {
    this.names.set(conversationId, name);
    if (state) this.states.set(conversationId, state);
    if (placement) this.placements.set(conversationId, placement);
    this.render();
  }

  /** `workspaces`: where a conversation works (undefined: not known). */
  placement(conversationId: string): Placement | undefined {
    return this.placements.get(conversationId);
  }

  /** Draw the rows again (the agents' and workspaces' names arrived). */
  refresh(): void {
    this.render();
  }

  /** `inbox`: a conversation's list state changed (`conversation.status`). False: not in the list. */
  setState(conversationId: string, state: InboxState): boolean {
    if (!this.names.has(conversationId)) return false;
    this.states.set(conversationId, state);
    this.render();
    return true;
  }

  /** `inbox`: which rows to show (the list itself holds archived or unarchived ones, as listed). */
  setView(view: InboxView): void {
    this.view = view;
    this.render();
  }

  remove(conversationId: string): void {
    this.names.delete(conversationId);
    this.states.delete(conversationId);
    this.placements.delete(conversationId);
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
    replace(
      this.list,
      ...[...this.names]
        .filter(([id]) => id === this.selected || inView(this.states.get(id), this.view))
        .map(([id, name]) => this.row(id, name)),
    );
  }

  private row(id: string, name: string): HTMLElement {
    const li = h("li", { "data-conversation-id": id, class: id === this.selected ? "selected" : "" });
    const state = this.states.get(id);
    const inbox = inboxDetails(state);
    const placement = this.placements.get(id);
    const place = placement ? this.actions.placement(placement) : null;
    const open = h(
      "button",
      { type: "button", class: "open", onclick: () => this.actions.open(id) },
      inbox || place
        ? h("span", { class: "row-head" }, h("span", { class: "name" }, name), inbox?.badges)
        : name,
      place,
      inbox?.preview,
    );
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
    const archived = state?.archived === true;
    const archive =
      state &&
      h(
        "button",
        {
          type: "button",
          class: "icon",
          title: archived ? "Unarchive" : "Archive",
          "aria-label": archived ? "Unarchive" : "Archive",
          "data-testid": archived ? "unarchive" : "archive",
          onclick: () => void this.actions.archive(id, !archived),
        },
        archived ? "↥" : "↧",
      );
    li.append(open, rename, ...(archive ? [archive] : []), del);
    return li;
  }
}
