// The `changes` extension in the console: what the open conversation changed in its workspace, file
// by file against the commit it started from. A "Changes" button in the conversation's head shows the
// totals; it opens a view in the timeline's place (the message box stays, to ask the agent for more):
// the files with their status and +/- counts, and a tap on one shows its unified diff, drawn like a
// tool call's diff, so it reads on a 390 px phone. `changes.changed` (a run changed something) updates
// the totals and, while the view is open, lists again. Files are addressed by the server's file ids;
// every path is relative to the conversation's path base. Hidden for a conversation that is not in a
// git repository (`not_implemented`) and without the extension.
import { type PhebyClient, PhebyError } from "@pheby/client";
import { FEATURE_CHANGES, type ServerMessageOf } from "@pheby/protocol";
import { unifiedDiffView } from "./activity.js";
import { h, replace } from "./dom.js";

type Snapshot = ServerMessageOf<"changes.snapshot">;
type ChangedFile = Snapshot["files"][number];
type FileDiff = ServerMessageOf<"changes.file">;
type Changed = ServerMessageOf<"changes.changed">;

/** Diff lines shown before "Show all": the user asked for this file, so most diffs show whole. */
const REVIEW_LINES_SHOWN = 400;

const STATUS_MARKS: Record<string, [mark: string, label: string]> = {
  added: ["A", "added"],
  modified: ["M", "modified"],
  deleted: ["D", "deleted"],
  renamed: ["R", "renamed"],
  type_changed: ["T", "type changed"],
};

/** A file's status as a one-letter mark and a word; one a newer server added is "changed". */
export function statusMark(status: string): [mark: string, label: string] {
  return STATUS_MARKS[status] ?? ["?", "changed"];
}

/** `3 files +10 −2` (what the button and the view's head say). */
export function totals(files: number, additions: number, deletions: number): string {
  return `${files} file${files === 1 ? "" : "s"} +${additions} −${deletions}`;
}

export class ChangesView {
  /** The button in the conversation's head: "Changes · 3 files +10 −2". */
  readonly button = h(
    "button",
    { type: "button", class: "changes-toggle", "data-testid": "changes-toggle", hidden: true },
    "Changes",
  );
  /** The view, in the timeline's place while open. */
  readonly el = h("section", {
    class: "changes",
    "data-testid": "changes",
    "aria-label": "Changes",
    hidden: true,
  });
  private readonly head = h("div", { class: "changes-head" });
  private readonly body = h("div", { class: "changes-body" });
  private conversationId: string | null = null;
  private snapshot: Snapshot | null = null;
  /** The file whose diff is shown, or null for the list. */
  private fileId: string | null = null;
  /** Bumped by every load, so an answer to an older one is dropped. */
  private generation = 0;

  constructor(
    private readonly client: PhebyClient,
    private readonly report: (message: string) => void,
    /** Show the view instead of the timeline (true) or the timeline again. */
    private readonly toggled: (open: boolean) => void,
  ) {
    this.button.addEventListener("click", () => (this.isOpen ? this.close() : void this.open()));
    this.el.append(this.head, this.body);
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /**
   * Follow a conversation (on open and after every reconnect, which may have missed `changes.changed`):
   * list its changes for the button's totals. A conversation outside git has no Changes.
   */
  async load(conversationId: string | null): Promise<void> {
    if (conversationId !== this.conversationId) {
      // Nothing of the previous conversation stays on screen while this one is listed.
      this.close();
      this.snapshot = null;
      this.fileId = null;
      this.button.hidden = true;
    }
    this.conversationId = conversationId;
    if (!conversationId || !this.client.features.includes(FEATURE_CHANGES)) {
      this.button.hidden = true;
      return;
    }
    await this.list();
  }

  /** A `changes.changed`: a run of some conversation changed its files. */
  changed(m: Changed): void {
    if (m.conversation_id !== this.conversationId) return;
    this.setButton(m.file_count, m.additions, m.deletions, false);
    if (this.isOpen) void this.list();
  }

  async open(): Promise<void> {
    this.el.hidden = false;
    this.button.setAttribute("aria-expanded", "true");
    this.toggled(true);
    this.render();
    await this.list();
  }

  close(): void {
    if (!this.isOpen) return;
    this.el.hidden = true;
    this.fileId = null;
    this.button.setAttribute("aria-expanded", "false");
    this.toggled(false);
  }

  /** List the changes again; redraw, and the open file's diff with them. */
  private async list(): Promise<void> {
    const conversation_id = this.conversationId;
    if (!conversation_id) return;
    const generation = ++this.generation;
    let snapshot: Snapshot;
    try {
      snapshot = await this.client.listChanges(conversation_id);
    } catch (err) {
      if (generation !== this.generation) return;
      if (err instanceof PhebyError && err.code === "not_implemented") {
        // Not in a git repository: nothing to review here.
        this.snapshot = null;
        this.button.hidden = true;
        this.close();
        return;
      }
      this.report(`Could not list the changes: ${(err as Error).message}`);
      return;
    }
    if (generation !== this.generation) return;
    this.snapshot = snapshot;
    const sum = (key: "additions" | "deletions") => snapshot.files.reduce((n, f) => n + f[key], 0);
    this.setButton(snapshot.files.length, sum("additions"), sum("deletions"), snapshot.truncated);
    if (!this.isOpen) return;
    if (this.fileId !== null) await this.showFile(this.fileId);
    else this.render();
  }

  private setButton(files: number, additions: number, deletions: number, truncated: boolean): void {
    this.button.hidden = false;
    this.button.dataset.files = String(files);
    replace(
      this.button,
      "Changes",
      files > 0
        ? h(
            "span",
            { class: "changes-count" },
            ` · ${files}${truncated ? "+" : ""} `,
            h("ins", {}, `+${additions}`),
            " ",
            h("del", {}, `−${deletions}`),
          )
        : null,
    );
  }

  /** The list of changed files. */
  private render(): void {
    const snapshot = this.snapshot;
    this.fileId = null;
    replace(
      this.head,
      this.backButton("← Chat", "changes-close", () => this.close()),
      h(
        "span",
        { class: "changes-title" },
        snapshot
          ? `${totals(
              snapshot.files.length,
              snapshot.files.reduce((n, f) => n + f.additions, 0),
              snapshot.files.reduce((n, f) => n + f.deletions, 0),
            )} since `
          : "Changes",
        snapshot
          ? h("code", { title: snapshot.base.commit, "data-testid": "changes-base" }, snapshot.base.label)
          : null,
      ),
      h(
        "button",
        {
          type: "button",
          class: "icon",
          title: "Refresh",
          "aria-label": "Refresh",
          "data-testid": "changes-refresh",
          onclick: () => void this.list(),
        },
        "↻",
      ),
    );
    if (!snapshot) {
      replace(this.body, h("p", { class: "changes-note" }, "Listing…"));
      return;
    }
    replace(
      this.body,
      snapshot.truncated
        ? h(
            "p",
            { class: "changes-note", "data-testid": "changes-truncated" },
            `Only the first ${snapshot.files.length} changed files are listed.`,
          )
        : null,
      snapshot.files.length === 0
        ? h(
            "p",
            { class: "changes-note", "data-testid": "changes-empty" },
            "No changes since the base commit.",
          )
        : h(
            "ul",
            { class: "changed-files", "data-testid": "changed-files" },
            ...snapshot.files.map((f) => this.row(f)),
          ),
    );
  }

  private row(file: ChangedFile): HTMLElement {
    const [mark, label] = statusMark(file.status);
    return h(
      "li",
      {},
      h(
        "button",
        {
          type: "button",
          class: "changed-file",
          "data-file-id": file.file_id,
          "data-status": file.status,
          onclick: () => void this.showFile(file.file_id),
        },
        h("span", { class: `file-status ${file.status}`, title: label, "aria-label": label }, mark),
        h(
          "span",
          { class: "file-path" },
          file.path,
          file.old_path ? h("span", { class: "old-path" }, ` ← ${file.old_path}`) : null,
          file.type === "file" ? null : h("span", { class: "file-type" }, ` (${file.type})`),
        ),
        file.binary
          ? h("span", { class: "file-stat binary" }, "binary")
          : h(
              "span",
              { class: "file-stat" },
              h("ins", {}, `+${file.additions}`),
              " ",
              h("del", {}, `−${file.deletions}`),
            ),
      ),
    );
  }

  /** One file's diff against the base, in the list's place. */
  private async showFile(fileId: string): Promise<void> {
    const conversation_id = this.conversationId;
    const file = this.snapshot?.files.find((f) => f.file_id === fileId);
    if (!conversation_id) return;
    this.fileId = fileId;
    const generation = this.generation;
    replace(
      this.head,
      this.backButton("← Files", "changes-files", () => this.render()),
      h("span", { class: "changes-title file-path" }, file?.path ?? ""),
    );
    if (!file) {
      // Gone from the list: it no longer differs from the base.
      replace(
        this.body,
        h("p", { class: "changes-note" }, "This file no longer differs from the base commit."),
      );
      return;
    }
    let diff: FileDiff;
    try {
      diff = await this.client.diffChange(conversation_id, fileId);
    } catch (err) {
      if (generation !== this.generation || this.fileId !== fileId) return;
      if (err instanceof PhebyError && err.code === "not_found") {
        replace(
          this.body,
          h("p", { class: "changes-note" }, "This file no longer differs from the base commit."),
        );
        return;
      }
      this.report(`Could not show the diff: ${(err as Error).message}`);
      return;
    }
    if (generation !== this.generation || this.fileId !== fileId) return;
    replace(
      this.body,
      diff.patch === null
        ? h(
            "p",
            { class: "changes-note", "data-testid": "changes-binary" },
            file.binary ? "Binary file: no diff to show." : "No text diff to show.",
          )
        : unifiedDiffView(
            {
              path: diff.path,
              patch: diff.patch,
              additions: file.additions,
              deletions: file.deletions,
              notes: [
                file.old_path ? `renamed from ${file.old_path}` : "",
                diff.truncated ? "truncated" : "",
              ],
            },
            REVIEW_LINES_SHOWN,
          ),
      diff.truncated
        ? h(
            "p",
            { class: "changes-note", "data-testid": "changes-patch-truncated" },
            "The diff is too long to show whole: it stops here.",
          )
        : null,
    );
  }

  private backButton(label: string, testid: string, onclick: () => void): HTMLElement {
    return h("button", { type: "button", class: "link back", "data-testid": testid, onclick }, label);
  }
}
