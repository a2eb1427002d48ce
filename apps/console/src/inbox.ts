// The `inbox` extension in the conversation list: each row's status badge, unread count and
// one-line preview; the "All / Needs me / Archived" filter; and the search box with its results.
// Without the extension (a server that did not enable it) none of this shows.
import type { ConversationEntry, PhebyClient, SearchHit } from "@pheby/client";
import { CONVERSATION_STATUSES, type ConversationStatusValue } from "@pheby/protocol";
import { h, replace } from "./dom.js";

/** What the list shows: every unarchived conversation, only the ones waiting for me, or the archived ones. */
export type InboxView = "all" | "waiting" | "archived";

/** A conversation's list state, as entries and `conversation.status` carry it. */
export type InboxState = Pick<ConversationEntry, "status" | "pending" | "unread" | "preview" | "archived">;

/** The inbox fields of an entry or a `conversation.status`, or undefined when it carries none. */
export function inboxStateOf(m: InboxState): InboxState | undefined {
  if (m.status === undefined) return undefined;
  return { status: m.status, pending: m.pending, unread: m.unread, preview: m.preview, archived: m.archived };
}

/** A status as shown: one a newer server added is `idle` (docs/protocol.md). */
export function shownStatus(state: InboxState): ConversationStatusValue {
  return state.status !== undefined && (CONVERSATION_STATUSES as readonly string[]).includes(state.status)
    ? state.status
    : "idle";
}

/** Whether a row belongs in `view`. */
export function inView(state: InboxState | undefined, view: InboxView): boolean {
  if (state === undefined) return view !== "archived";
  if (view === "archived") return state.archived === true;
  if (state.archived === true) return false;
  return view === "all" || shownStatus(state) === "waiting";
}

const STATUS_LABELS: Record<ConversationStatusValue, string> = {
  waiting: "needs you",
  running: "running",
  failed: "failed",
  idle: "idle",
};

/** A row's badge, unread count and preview line (nothing without inbox state). */
export function inboxDetails(
  state: InboxState | undefined,
): { badges: HTMLElement; preview: HTMLElement } | undefined {
  if (state === undefined) return undefined;
  const status = shownStatus(state);
  const unread = state.unread ?? 0;
  const badges = h(
    "span",
    { class: "inbox-badges" },
    status === "idle"
      ? null
      : h(
          "span",
          { class: `status-badge ${status}`, "data-testid": "status-badge", "data-status": status },
          STATUS_LABELS[status],
        ),
    unread > 0
      ? h(
          "span",
          { class: "unread-count", "data-testid": "unread", title: `${unread} unread` },
          String(unread),
        )
      : null,
  );
  const text = state.preview ? `${state.preview.role === "user" ? "You: " : ""}${state.preview.text}` : "";
  const preview = h("span", { class: "preview", "data-testid": "preview" }, text.replace(/\s+/g, " "));
  return { badges, preview };
}

/** What the inbox bar asks the app to do. */
export interface InboxActions {
  /** Show another view of the list (the app lists again). */
  view(view: InboxView): void;
  /** Open a conversation found by a search. */
  open(conversationId: string): void;
  /** The name of a conversation, for a result's heading. */
  name(conversationId: string): string;
  report(message: string): void;
}

/** The filter buttons and the search box above the conversation list. */
export class InboxBar {
  readonly el = h("div", { class: "inbox-bar", "data-testid": "inbox-bar" });
  private current: InboxView = "all";
  private readonly filters = h("div", { class: "inbox-filters", role: "group", "aria-label": "Show" });
  private readonly input = h("input", {
    type: "search",
    placeholder: "Search messages",
    maxlength: 200,
    "aria-label": "Search messages",
    "data-testid": "search",
  });
  private readonly results = h("ul", { class: "search-results", "data-testid": "search-results" });

  constructor(
    private readonly client: PhebyClient,
    private readonly actions: InboxActions,
  ) {
    const form = h("form", { class: "search", role: "search" }, this.input);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.search();
    });
    this.input.addEventListener("input", () => {
      if (this.input.value.trim() === "") replace(this.results);
    });
    this.el.append(form, this.results, this.filters);
    this.renderFilters();
  }

  /** The view the list shows. */
  get view(): InboxView {
    return this.current;
  }

  /** Show or hide the bar (the server enabled `inbox` or not). */
  setEnabled(enabled: boolean): void {
    this.el.hidden = !enabled;
    if (!enabled && this.current !== "all") this.current = "all";
  }

  private renderFilters(): void {
    const labels: [InboxView, string][] = [
      ["all", "All"],
      ["waiting", "Needs me"],
      ["archived", "Archived"],
    ];
    replace(
      this.filters,
      ...labels.map(([view, label]) =>
        h(
          "button",
          {
            type: "button",
            class: view === this.current ? "filter active" : "filter",
            "aria-pressed": String(view === this.current),
            "data-testid": `filter-${view}`,
            onclick: () => {
              if (view === this.current) return;
              this.current = view;
              this.renderFilters();
              this.actions.view(view);
            },
          },
          label,
        ),
      ),
    );
  }

  private async search(): Promise<void> {
    const query = this.input.value.trim();
    if (!query) return;
    let hits: SearchHit[];
    try {
      hits = await this.client.search(query);
    } catch (err) {
      this.actions.report(`Search failed: ${(err as Error).message}`);
      return;
    }
    if (this.input.value.trim() !== query) return;
    replace(
      this.results,
      ...(hits.length === 0
        ? [h("li", { class: "empty" }, "No results.")]
        : hits.map((hit) =>
            h(
              "li",
              {},
              h(
                "button",
                {
                  type: "button",
                  "data-testid": "search-result",
                  "data-conversation-id": hit.conversation_id,
                  onclick: () => {
                    this.input.value = "";
                    replace(this.results);
                    this.actions.open(hit.conversation_id);
                  },
                },
                h("strong", {}, this.actions.name(hit.conversation_id) || "Conversation"),
                h("span", { class: "snippet" }, hit.snippet),
              ),
            ),
          )),
    );
  }
}
