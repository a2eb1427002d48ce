// The agent's modes and slash commands (the `modes` extension): a compact mode picker that sits with
// the composer's buttons, and the command palette that opens over the message box when its text
// starts with `/`. Agent-provided names and descriptions are shown as text only.
import type { PhebyClient } from "@pheby/client";
import { FEATURE_MODES, type ServerMessageOf } from "@pheby/protocol";
import { h, replace } from "./dom.js";

type Mode = ServerMessageOf<"modes.snapshot">["modes"][number];
/** One of the agent's slash commands, as `commands.snapshot` lists it. */
export type AgentCommand = ServerMessageOf<"commands.snapshot">["commands"][number];

/**
 * The open conversation's mode: a `<select>` of the agent's modes, hidden when the server does not
 * offer `modes` or the agent has none. A mode in which the agent runs tools without asking is marked
 * (⚠ in the list, a warning border while chosen).
 */
export class ModePicker {
  readonly el = h("select", {
    class: "mode",
    "aria-label": "Agent mode",
    "data-testid": "mode",
    hidden: true,
  });
  private conversationId: string | null = null;
  private modes: readonly Mode[] = [];

  constructor(
    private readonly client: PhebyClient,
    private readonly report: (message: string) => void,
  ) {
    this.el.addEventListener("change", () => void this.choose(this.el.value));
  }

  /** Load the modes of a conversation (on open and after every reconnect); null hides the picker. */
  async load(conversationId: string | null): Promise<void> {
    this.conversationId = conversationId;
    if (!conversationId || !this.client.features.includes(FEATURE_MODES)) {
      this.show([], null);
      return;
    }
    try {
      const snapshot = await this.client.listModes(conversationId);
      if (this.conversationId === conversationId) this.show(snapshot.modes, snapshot.current_mode_id);
    } catch (err) {
      if (this.conversationId !== conversationId) return;
      this.show([], null);
      this.report(`Could not list the agent's modes: ${(err as Error).message}`);
    }
  }

  /** `mode.changed`: another client, or the agent itself, changed a conversation's mode. */
  changed(m: ServerMessageOf<"mode.changed">): void {
    if (m.conversation_id !== this.conversationId) return;
    // A mode this list does not know (the agent's list changed): fetch the list again.
    if (!this.modes.some((mode) => mode.mode_id === m.mode_id)) void this.load(m.conversation_id);
    else this.select(m.mode_id);
  }

  private show(modes: readonly Mode[], current: string | null): void {
    this.modes = modes;
    replace(
      this.el,
      // Until the agent said which mode it is in, nothing is claimed: a placeholder is selected.
      current === null ? h("option", { value: "", disabled: true, selected: true }, "Mode") : null,
      ...modes.map((mode) =>
        h(
          "option",
          {
            value: mode.mode_id,
            title: mode.description ?? undefined,
            "data-auto-approves": mode.auto_approves ? "true" : undefined,
          },
          mode.auto_approves ? `${mode.name} ⚠` : mode.name,
        ),
      ),
    );
    this.el.hidden = modes.length === 0;
    if (current !== null) this.select(current);
  }

  private select(modeId: string): void {
    this.el.value = modeId;
    const mode = this.modes.find((m) => m.mode_id === modeId);
    this.el.classList.toggle("auto-approves", mode?.auto_approves === true);
    this.el.title = mode?.auto_approves
      ? `${mode.name}: the agent runs tools without asking`
      : (mode?.description ?? mode?.name ?? "");
  }

  private async choose(modeId: string): Promise<void> {
    const conversationId = this.conversationId;
    if (!conversationId || !modeId) return;
    try {
      const changed = await this.client.setMode(conversationId, modeId);
      if (this.conversationId === conversationId) this.select(changed.mode_id);
    } catch (err) {
      this.report(`Could not change the mode: ${(err as Error).message}`);
      void this.load(conversationId);
    }
  }
}

/**
 * The agent's slash commands, offered while the message starts with `/`: each whose `/name` starts
 * with what was typed (a command's arguments follow a space, so once the name is complete it closes).
 * Arrow keys move, Enter or Tab choose, Escape closes; choosing puts `/name ` in the message box.
 */
export class CommandPalette {
  readonly el = h("ul", {
    class: "palette",
    role: "listbox",
    id: "command-palette",
    "aria-label": "Agent commands",
    "data-testid": "palette",
    hidden: true,
  });
  private commands: readonly AgentCommand[] = [];
  private matches: readonly AgentCommand[] = [];
  private active = 0;
  /** Escape closed it: it stays closed until the text stops being a command. */
  private dismissed = false;

  constructor(private readonly choose: (command: AgentCommand) => void) {}

  /** Whether it is showing commands (the composer's keys then go to it). */
  get open(): boolean {
    return !this.el.hidden;
  }

  /** The conversation's commands (`commands.list`, `commands.snapshot`); `text`: the message box now. */
  set(commands: readonly AgentCommand[], text: string): void {
    this.commands = commands;
    this.update(text);
  }

  /** The message box changed: filter, or close when the text is not the start of a command. */
  update(text: string): void {
    if (!text.startsWith("/")) this.dismissed = false;
    const typed = text.toLowerCase();
    this.matches =
      this.dismissed || !text.startsWith("/") || text.includes("\n")
        ? []
        : this.commands.filter((c) => `/${c.name}`.toLowerCase().startsWith(typed));
    this.active = Math.min(this.active, Math.max(0, this.matches.length - 1));
    this.render();
  }

  /** Move the highlight (arrow keys), wrapping around. */
  move(by: number): void {
    if (this.matches.length === 0) return;
    this.active = (this.active + by + this.matches.length) % this.matches.length;
    this.render();
  }

  /** Choose the highlighted command (Enter, Tab). */
  pick(): void {
    const command = this.matches[this.active];
    if (command) this.choose(command);
  }

  /** Escape: close until the text stops starting with `/`. */
  dismiss(): void {
    this.dismissed = true;
    this.matches = [];
    this.render();
  }

  /** The highlighted option's element ID, for the message box's `aria-activedescendant`. */
  get activeId(): string | undefined {
    return this.open ? `command-option-${this.active}` : undefined;
  }

  private render(): void {
    replace(
      this.el,
      ...this.matches.map((c, i) => {
        const item = h(
          "li",
          {
            role: "option",
            id: `command-option-${i}`,
            class: i === this.active ? "active" : undefined,
            "aria-selected": String(i === this.active),
            "data-testid": "command",
            "data-name": c.name,
          },
          h("span", { class: "command-name" }, `/${c.name}`),
          c.hint ? h("span", { class: "command-hint" }, ` ${c.hint}`) : null,
          c.description ? h("span", { class: "command-description" }, c.description) : null,
        );
        // The message box keeps the focus (a phone keeps its keyboard up).
        item.addEventListener("mousedown", (event) => event.preventDefault());
        item.addEventListener("click", () => this.choose(c));
        return item;
      }),
    );
    this.el.hidden = this.matches.length === 0;
    this.el.querySelector(".active")?.scrollIntoView({ block: "nearest" });
  }
}
