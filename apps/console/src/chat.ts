// The timeline of one conversation: message bubbles, tool pills, approval and
// clarification cards, attachments. Every item is keyed by its protocol ID and
// updated in place, so live events and a reconnect snapshot converge on the
// same DOM. All agent-provided strings go through textContent or the Markdown
// renderer, never innerHTML.
import type { AttachmentDescriptor, ServerMessageOf, ToolState } from "@pheby/protocol";
import { ContextMeter, contentView, renderPlan, renderThought, toolDetailView } from "./activity.js";
import { append, formatBytes, h, replace } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

type History = ServerMessageOf<"conversation.history">;
type ApprovalRequest = Omit<ServerMessageOf<"approval.request">, "type">;
type ClarifyRequest = Omit<ServerMessageOf<"clarify.request">, "type">;
type PlanEntries = ServerMessageOf<"plan.updated">["entries"];

/** What the view asks the app to do on the user's behalf. */
export interface ChatActions {
  respondApproval(approvalId: string, choice: string, reason?: string): Promise<void>;
  respondClarify(clarifyId: string, response: string): Promise<void>;
  /** Fetch an attachment's bytes with the authenticated GET. */
  fetchAttachment(attachment: AttachmentDescriptor): Promise<Blob>;
  /** The active run changed (null: none), e.g. to show the stop button. */
  runChanged(runId: string | null): void;
}

/**
 * A run's answer as it streams. Cards, notices and files that arrive mid-run
 * are placed where they happened: after the text streamed so far, with what
 * follows in a new segment below them (the deltas are cumulative, so a segment
 * shows the text from its `from` offset on).
 */
interface Flow {
  messageId: string;
  /** The bubble the text and new tool pills currently go to. */
  segment: HTMLElement;
  /** Offset in the cumulative text where `segment` starts. */
  from: number;
  /** Length of the cumulative text seen so far. */
  length: number;
  /** The last item placed after `segment`; new output then starts a new segment below it. */
  after: HTMLElement | null;
  /** Still streaming: the newest segment shows a cursor. */
  live: boolean;
}

const CHOICE_LABELS: Record<string, string> = {
  once: "Allow once",
  session: "Allow for this conversation",
  always: "Always allow",
  deny: "Deny",
};

export class ChatView {
  /** The scrolling timeline element. */
  readonly el = h("div", { class: "timeline", "data-testid": "timeline" });
  private readonly items = new Map<string, HTMLElement>();
  /** Countdown timers of the open question cards that expire. */
  private readonly timers = new Map<HTMLElement, ReturnType<typeof setInterval>>();
  /** Active and finished runs of this view, by run ID. */
  private readonly runs = new Map<string, Flow>();
  private readonly objectUrls = new Set<string>();
  /** What each tool call's detail last was (an event without `content` leaves it as it was). */
  private readonly tools = new Map<string, ToolState>();
  private activeRun: string | null = null;
  private localId = 0;
  /** The context meter (`activity`): the app shows it in the conversation's header. */
  readonly meter = new ContextMeter();

  constructor(private readonly actions: ChatActions) {}

  /** The active run's ID, if any. */
  get runId(): string | null {
    return this.activeRun;
  }

  /** Forget everything (switching conversations, or the conversation was deleted). */
  clear(): void {
    for (const url of this.objectUrls) URL.revokeObjectURL(url);
    this.objectUrls.clear();
    for (const timer of this.timers.values()) clearInterval(timer);
    this.timers.clear();
    this.items.clear();
    this.runs.clear();
    this.tools.clear();
    this.meter.set(null);
    replace(this.el);
    this.setRun(null);
  }

  /** Replace the whole view with a `conversation.open` snapshot (first open and every reconnect). */
  reset(snapshot: History): void {
    this.clear();
    if (snapshot.has_more)
      this.el.appendChild(h("div", { class: "more" }, "Older messages are not shown (console shows 200)."));
    // Each file follows the message it belongs to; the active run's files go where its answer is.
    for (const m of snapshot.messages) {
      this.bubble(m.message_id, m.role, m.text);
      for (const a of snapshot.attachments) if (a.message_id === m.message_id) this.attachment(a);
    }
    if (snapshot.run) {
      this.startRun(snapshot.run.run_id, snapshot.run.message_id);
      // The active run's thoughts so far (`thoughts`) came before its answer text.
      for (const t of snapshot.thoughts ?? []) this.thought(t.run_id, t.thought_id, t.text, !t.complete);
      this.stream(snapshot.run.message_id, snapshot.run.text);
    }
    const placed = new Set(snapshot.messages.map((m) => m.message_id));
    for (const a of snapshot.attachments) if (!a.message_id || !placed.has(a.message_id)) this.attachment(a);
    for (const t of snapshot.tools) this.tool(t);
    for (const a of snapshot.approvals) this.approval(a);
    for (const c of snapshot.clarifications) this.clarify(c);
    if (snapshot.plan) this.plan(snapshot.run?.run_id ?? null, snapshot.plan);
    this.meter.set(snapshot.usage);
    this.scroll();
  }

  /** The user's own message, shown at once (the protocol has no event for it). */
  userMessage(text: string): void {
    this.bubble(`local-${++this.localId}`, "user", text);
    this.scroll();
  }

  runAccepted(runId: string): void {
    this.setRun(runId);
  }

  messageStart(m: ServerMessageOf<"message.start">): void {
    this.startRun(m.run_id, m.message_id);
    this.scroll();
  }

  /** Cumulative text: replace the bubble's content. */
  messageDelta(m: ServerMessageOf<"message.delta">): void {
    this.stream(m.message_id, m.text);
    this.scroll();
  }

  messageComplete(m: ServerMessageOf<"message.complete">): void {
    if (m.kind === "notice") {
      const el = this.keyed(`notice:${m.message_id}`, () => {
        const notice = h("div", { class: "notice", role: "status" });
        this.place(this.activeRun, notice);
        return notice;
      });
      replace(el, renderMarkdown(m.text));
    } else {
      this.stream(m.message_id, m.text);
      this.endStream(m.message_id);
    }
    this.scroll();
  }

  runFinished(m: ServerMessageOf<"run.finished">): void {
    const flow = this.runs.get(m.run_id);
    if (flow) this.endStream(flow.messageId);
    if (m.status !== "completed") {
      const text = m.status === "cancelled" ? "Stopped." : `Run failed: ${m.error ?? "unknown error"}`;
      const el = h("div", { class: `run-end ${m.status}`, "data-run-status": m.status }, text);
      if (flow) this.tail(flow).appendChild(el);
      else this.el.appendChild(el);
    }
    // A thought cut short by the run's end streams no more.
    for (const thought of this.el.querySelectorAll<HTMLElement>(
      `.thought.streaming[data-run-id="${CSS.escape(m.run_id)}"]`,
    ))
      renderThought(thought, thought.querySelector(".thought-text")?.textContent ?? "", false);
    // Any card of this run still open can no longer be answered.
    for (const card of this.el.querySelectorAll<HTMLElement>(
      `.card.open[data-run-id="${CSS.escape(m.run_id)}"]`,
    ))
      this.closeCard(card, "Closed: the run ended.");
    if (this.activeRun === m.run_id) this.setRun(null);
    this.scroll();
  }

  /** A tool pill, keyed by `tool_call_id`, inside its run's bubble when there is one. */
  tool(t: ToolState): void {
    const pill = this.keyed(`tool:${t.tool_call_id}`, () => {
      const el = h("span", { class: "pill", "data-tool-call-id": t.tool_call_id });
      const flow = t.run_id ? this.runs.get(t.run_id) : undefined;
      (flow ? this.tail(flow).querySelector(".tools")! : this.el).appendChild(el);
      return el;
    });
    pill.dataset.status = t.status;
    pill.className = `pill ${t.status}`;
    const ms = t.duration_ms == null ? "" : ` · ${t.duration_ms} ms`;
    replace(pill, h("b", {}, t.tool_name), ` · ${t.status}${ms}`, t.error ? ` · ${t.error}` : "");
    if (t.args_redacted) pill.title = JSON.stringify(t.args_redacted, null, 2);
    this.toolDetail(pill, t);
  }

  /**
   * A tool call's detail (`activity`: title, locations, content) right under its pill, drawn again
   * only when it changed, so a diff's "show all" or an opened output stays as the user left it.
   */
  private toolDetail(pill: HTMLElement, t: ToolState): void {
    const before = this.tools.get(t.tool_call_id);
    // Fields an event leaves out are unchanged (content is repeated only when it changed).
    const now: ToolState = {
      ...t,
      kind: t.kind ?? before?.kind,
      title: t.title ?? before?.title,
      locations: t.locations ?? before?.locations,
      content: t.content ?? before?.content,
    };
    this.tools.set(t.tool_call_id, now);
    const detail = (s: ToolState | undefined) =>
      JSON.stringify([s?.title ?? null, s?.locations ?? null, s?.content ?? null]);
    const old = this.items.get(`detail:${t.tool_call_id}`);
    if (old && detail(before) === detail(now)) return;
    const el = toolDetailView(now);
    if (old) old.remove();
    if (el) {
      this.items.set(`detail:${t.tool_call_id}`, el);
      pill.after(el);
      this.coverDetail(t.tool_call_id);
    } else this.items.delete(`detail:${t.tool_call_id}`);
  }

  /**
   * While an open approval card shows a call's preview, the same content under the call's pill is
   * hidden: on a phone the diff would otherwise take the screen twice. It shows again once answered.
   */
  private coverDetail(toolCallId: string): void {
    const detail = this.items.get(`detail:${toolCallId}`);
    if (!detail) return;
    detail.hidden = [...this.el.querySelectorAll<HTMLElement>(".card.approval.open[data-tool-call-id]")].some(
      (card) => card.dataset.toolCallId === toolCallId && card.querySelector(".content") !== null,
    );
  }

  /** The agent's plan (`activity`), a checklist in the run it belongs to, replaced by each update. */
  plan(runId: string | null, entries: PlanEntries): void {
    const el = this.keyed(`plan:${runId ?? ""}`, () => {
      const plan = h("div", { class: "plan", "data-testid": "plan", "data-run-id": runId ?? "" });
      this.place(runId, plan);
      return plan;
    });
    renderPlan(el, entries);
    this.scroll();
  }

  /** The agent's thinking (`thoughts`): the whole thought so far, folded under "Thinking" where it happened. */
  thought(runId: string, thoughtId: string, text: string, streaming: boolean): void {
    const el = this.keyed(`thought:${thoughtId}`, () => {
      const thought = h("div", { class: "thought", "data-thought-id": thoughtId, "data-run-id": runId });
      this.place(runId, thought);
      return thought;
    });
    renderThought(el, text, streaming);
    this.scroll();
  }

  /** The context usage (`activity`) of this conversation's agent session. */
  usage(m: ServerMessageOf<"usage.updated">): void {
    this.meter.set(m);
  }

  approval(a: ApprovalRequest): void {
    const card = this.card(`approval:${a.approval_id}`, "approval", a.run_id, "Approval needed");
    card.dataset.approvalId = a.approval_id;
    if (a.tool_call_id) card.dataset.toolCallId = a.tool_call_id;
    const reason = h("input", {
      type: "text",
      class: "reason",
      placeholder: "Reason (optional, with deny)",
      maxlength: 4000,
    });
    const buttons = a.choices.map((choice) =>
      h(
        "button",
        {
          type: "button",
          class: choice === "deny" ? "danger" : "",
          "data-choice": choice,
          onclick: () => {
            const why = choice === "deny" && reason.value.trim() ? reason.value.trim() : undefined;
            this.answer(card, () => this.actions.respondApproval(a.approval_id, choice, why));
          },
        },
        CHOICE_LABELS[choice] ?? choice,
      ),
    );
    append(
      card.querySelector(".body")!,
      h("p", {}, a.description),
      h("pre", {}, h("code", {}, a.command)),
      // What the call would do (`activity`): an edit's diff, a command's text, a plan to accept.
      a.preview?.length ? contentView(a.preview, { open: true }) : null,
      h("div", { class: "choices" }, ...buttons),
      a.choices.includes("deny") ? reason : null,
      this.expiry(card, a),
    );
    if (a.tool_call_id) this.coverDetail(a.tool_call_id);
    this.scroll();
  }

  approvalResolved(m: ServerMessageOf<"approval.resolved">): void {
    const card = this.items.get(`approval:${m.approval_id}`);
    if (!card) return;
    this.closeCard(
      card,
      m.accepted ? `Answered: ${CHOICE_LABELS[m.choice ?? ""] ?? m.choice}` : this.withdrawn(card),
    );
  }

  clarify(c: ClarifyRequest): void {
    const card = this.card(`clarify:${c.clarify_id}`, "clarify", c.run_id, "Question");
    card.dataset.clarifyId = c.clarify_id;
    const send = (response: string) =>
      this.answer(card, () => this.actions.respondClarify(c.clarify_id, response));
    const other = h("input", {
      type: "text",
      name: "other",
      placeholder: c.choices?.length ? "Other…" : "Your answer…",
      "aria-label": "Other answer",
    });
    const form = h(
      "form",
      {
        class: "other",
        onsubmit: (event: Event) => {
          event.preventDefault();
          if (other.value.trim()) send(other.value.trim());
        },
      },
      other,
      h("button", { type: "submit" }, "Send"),
    );
    append(
      card.querySelector(".body")!,
      h("p", {}, c.question),
      c.choices?.length
        ? h(
            "div",
            { class: "choices" },
            ...c.choices.map((choice) =>
              h("button", { type: "button", "data-choice": choice, onclick: () => send(choice) }, choice),
            ),
          )
        : null,
      form,
      this.expiry(card, c),
    );
    this.scroll();
  }

  clarifyResolved(m: ServerMessageOf<"clarify.resolved">): void {
    const card = this.items.get(`clarify:${m.clarify_id}`);
    if (card) this.closeCard(card, m.accepted ? "Answered." : this.withdrawn(card));
  }

  /**
   * A question's expiry (the `expiry` extension): a countdown to when the agent gives up, counted
   * from the frame's `ts` (the server's clock), not from this device's clock.
   */
  private expiry(card: HTMLElement, q: { expires_at?: string | null; ts: string }): HTMLElement | null {
    if (typeof q.expires_at !== "string") return null;
    const deadline = Date.now() + (Date.parse(q.expires_at) - Date.parse(q.ts));
    card.dataset.deadline = String(deadline);
    const line = h("p", { class: "expiry", "data-testid": "expiry" });
    const tick = () => {
      const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
      line.textContent = `Expires in ${left} s`;
    };
    tick();
    const timer = setInterval(tick, 1000);
    this.timers.set(card, timer);
    return line;
  }

  /** Why a question went away unanswered: it expired (its time ran out), or the agent withdrew it. */
  private withdrawn(card: HTMLElement): string {
    const deadline = Number(card.dataset.deadline ?? Number.NaN);
    // Allow for the delivery time of the frames around the deadline.
    return Date.now() >= deadline - 1500 ? "Expired unanswered." : "Withdrawn by the agent.";
  }

  /** An attachment: an inline preview for `inline_image`, a download link for everything else. */
  attachment(a: AttachmentDescriptor): void {
    if (this.items.has(`att:${a.attachment_id}`)) return;
    const label = `${a.filename} (${formatBytes(a.size)})`;
    const el = this.keyed(`att:${a.attachment_id}`, () => {
      const figure = h("figure", {
        class: `attachment ${a.direction}`,
        "data-attachment-id": a.attachment_id,
      });
      // A file the agent delivers mid-run goes where it happened in that run's answer.
      this.place(this.runOf(a.message_id), figure);
      return figure;
    });
    if (a.inline_image) {
      const img = h("img", { alt: a.filename });
      el.append(img, h("figcaption", {}, label));
      this.actions.fetchAttachment(a).then(
        (blob) => {
          img.src = this.objectUrl(blob);
        },
        () => el.append(h("span", { class: "error" }, " (preview unavailable)")),
      );
    } else {
      const link = h("a", { href: "#", class: "download", download: a.filename }, label);
      link.addEventListener("click", (event) => {
        if (link.dataset.ready) return;
        event.preventDefault();
        this.actions.fetchAttachment(a).then(
          (blob) => {
            link.href = this.objectUrl(blob);
            link.dataset.ready = "true";
            link.click();
          },
          () => link.append(" (unavailable)"),
        );
      });
      el.append(link);
    }
    this.scroll();
  }

  private setRun(runId: string | null): void {
    if (this.activeRun === runId) return;
    this.activeRun = runId;
    this.actions.runChanged(runId);
  }

  private keyed(key: string, create: () => HTMLElement): HTMLElement {
    let el = this.items.get(key);
    if (!el) {
      el = create();
      this.items.set(key, el);
      if (!el.isConnected) this.el.appendChild(el);
    }
    return el;
  }

  private bubble(id: string, role: "user" | "assistant", text: string): HTMLElement {
    const el = this.keyed(`msg:${id}`, () => this.segment(id, role));
    const body = el.querySelector(".text")!;
    if (role === "user") body.textContent = text;
    else replace(body, renderMarkdown(text));
    return el;
  }

  private segment(id: string, role: "user" | "assistant"): HTMLElement {
    return h(
      "div",
      { class: `msg ${role}`, "data-message-id": id, "data-role": role },
      h("div", { class: "tools" }),
      h("div", { class: "text" }),
    );
  }

  /** A run's answer begins: an empty, streaming bubble. */
  private startRun(runId: string, messageId: string): void {
    if (!this.runs.has(runId)) {
      const segment = this.bubble(messageId, "assistant", "");
      segment.dataset.runId = runId;
      segment.classList.add("streaming");
      this.runs.set(runId, { messageId, segment, from: 0, length: 0, after: null, live: true });
    }
    this.setRun(runId);
  }

  /** Show a message's cumulative text; a run's answer is split around what arrived mid-run. */
  private stream(messageId: string, text: string): void {
    const flow = this.runs.get(this.runOf(messageId) ?? "");
    if (!flow) {
      this.bubble(messageId, "assistant", text);
      return;
    }
    if (text.length > flow.length) this.tail(flow);
    flow.length = text.length;
    // A continuation starts a new bubble: the space that joined it to the text above has no place there.
    const shown = flow.from ? text.slice(flow.from).trimStart() : text;
    replace(flow.segment.querySelector(".text")!, renderMarkdown(shown));
  }

  /** The segment new output of a run goes to: a fresh one below anything placed after the current one. */
  private tail(flow: Flow): HTMLElement {
    if (!flow.after) return flow.segment;
    const next = this.segment(flow.messageId, "assistant");
    next.dataset.runId = flow.segment.dataset.runId!;
    next.classList.toggle("streaming", flow.live);
    flow.after.after(next);
    Object.assign(flow, { segment: next, from: flow.length, after: null });
    return next;
  }

  /**
   * Put a card, notice or file of a run where it happened: before the run's
   * bubble while that shows nothing yet, else after what the run has shown.
   */
  private place(runId: string | null, el: HTMLElement): void {
    const flow = runId ? this.runs.get(runId) : undefined;
    if (!flow?.segment.isConnected) {
      this.el.appendChild(el);
      return;
    }
    const shown =
      flow.segment.querySelector(".text")!.textContent || flow.segment.querySelector(".tools > *");
    if (!flow.after && !shown) {
      flow.segment.before(el);
      return;
    }
    (flow.after ?? flow.segment).after(el);
    flow.after = el;
    // The cursor moves on: what follows will appear below this item.
    flow.segment.classList.remove("streaming");
  }

  /** The run whose answer is this message, if this view saw it start. */
  private runOf(messageId: string | null): string | null {
    for (const [runId, flow] of this.runs) if (flow.messageId === messageId) return runId;
    return null;
  }

  /** The message is complete: no bubble of it (a run's answer may be split in several) shows a cursor. */
  private endStream(messageId: string): void {
    const flow = this.runs.get(this.runOf(messageId) ?? "");
    if (flow) flow.live = false;
    for (const seg of this.el.querySelectorAll(`.msg[data-message-id="${CSS.escape(messageId)}"]`))
      seg.classList.remove("streaming");
  }

  private card(key: string, kind: string, runId: string | null, title: string): HTMLElement {
    const card = this.keyed(key, () => {
      const el = h(
        "div",
        { class: `card ${kind} open`, "data-run-id": runId ?? "" },
        h("div", { class: "title" }, title),
        h("div", { class: "body" }),
        h("div", { class: "card-status", role: "status" }),
      );
      this.place(runId, el);
      return el;
    });
    replace(card.querySelector(".body")!);
    return card;
  }

  private answer(card: HTMLElement, send: () => Promise<void>): void {
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    card.querySelector(".card-status")!.textContent = "Sending…";
    send().catch((err: Error) => {
      card.querySelector(".card-status")!.textContent = `Not accepted: ${err.message}`;
      for (const b of card.querySelectorAll("button")) b.disabled = false;
    });
  }

  private closeCard(card: HTMLElement, text: string): void {
    clearInterval(this.timers.get(card));
    this.timers.delete(card);
    card.querySelector(".expiry")?.remove();
    card.classList.remove("open");
    card.classList.add("resolved");
    for (const el of card.querySelectorAll(".choices, form, input")) el.remove();
    card.querySelector(".card-status")!.textContent = text;
    // Answered, the preview's content lives on under the call's pill (when the call is shown): once is enough.
    const toolCallId = card.dataset.toolCallId;
    if (toolCallId && this.items.has(`detail:${toolCallId}`)) {
      card.querySelector(".content")?.remove();
      this.coverDetail(toolCallId);
    }
  }

  private objectUrl(blob: Blob): string {
    const url = URL.createObjectURL(blob);
    this.objectUrls.add(url);
    return url;
  }

  private scroll(): void {
    this.el.scrollTop = this.el.scrollHeight;
  }
}
