import {
  APPROVAL_CHOICES,
  type ClientMessageOf,
  FEATURE_ACTIVITY,
  FEATURE_EXPIRY,
  type PendingApproval,
  type PendingClarification,
  type ServerMessage,
} from "@pheby/protocol";
import type { Logger } from "pino";
import { boundDetail } from "../activity/bound.js";
import type { ClarifyAnswer, ClarifyQuestion, PermissionAnswer, PermissionQuestion } from "../agent/port.js";
import { ProtocolError } from "../errors.js";
import type { Origin, Outbox } from "../outbox/outbox.js";
import { newId } from "../util/ids.js";
import { type Clock, iso } from "../util/time.js";

/** The run a question belongs to. */
export interface Asker {
  conversationId: string;
  runId: string;
  /** The agent-side session key shown as `session_key`. */
  sessionKey: string;
  /** YOLO may answer its permission questions (false: a run nobody started from a client). */
  autoApprove: boolean;
}

/** What {@link Decisions} needs from the server. */
export interface DecisionsDeps {
  outbox: Outbox;
  clock: Clock;
  log: Logger;
  /** Whether YOLO is on for a conversation, read when each question is asked. */
  yolo(conversationId: string): boolean;
}

const CANCELLED = { outcome: "cancelled" } as const;
const NO_FEATURES: ReadonlySet<string> = new Set();
const EXPIRED = { outcome: "cancelled", expired: true } as const;

interface Entry<W, A> {
  wire: W;
  runId: string;
  /** When the agent gives up on it (epoch ms), or null when unknown. */
  expiresAt: number | null;
  /** Fields only connections with an extension see, by extension (`activity`: the call and its preview). */
  fields: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  timer: NodeJS.Timeout | undefined;
  settle(answer: A): void;
}

/** What a question's kind says when it expires, for the notice. */
interface Kind<W> {
  /** The broadcast asking the question. */
  requested(wire: W): ServerMessage;
  /** The broadcast telling clients a question was withdrawn. */
  withdrawn(id: string): ServerMessage;
  /** The notice of an expired question. */
  expiredNotice: string;
}

/**
 * The pending questions of one kind. An entry leaves the map exactly once —
 * answered, withdrawn by the agent, or withdrawn because its run ended — and
 * that removal is what makes the single `*.resolved` and the single answer to
 * the backend: whoever removes it first wins, everyone after gets `*_not_found`.
 */
class Gate<W extends { conversation_id: string; ts: string }, A> {
  readonly #entries = new Map<string, Entry<W, A>>();

  constructor(
    private readonly outbox: Outbox,
    private readonly clock: Clock,
    private readonly kind: Kind<W>,
  ) {}

  /**
   * Broadcast the question and wait for its answer, or `cancelled` once withdrawn. With
   * `expiresInMs` it is withdrawn when that passes (the answer then says `expired`), and the
   * conversation is told; `expiry` connections see `expires_at` on the request either way.
   */
  ask(
    id: string,
    wire: W,
    runId: string,
    withdraw: AbortSignal | undefined,
    expiresInMs?: number,
    fields: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {},
  ): Promise<A> {
    return new Promise<A>((resolve) => {
      const onAbort = () => this.withdraw(id);
      const valid = typeof expiresInMs === "number" && Number.isFinite(expiresInMs) && expiresInMs > 0;
      const expiresAt = valid ? Date.parse(wire.ts) + expiresInMs : null;
      const entry: Entry<W, A> = {
        wire,
        runId,
        expiresAt,
        fields,
        timer: valid ? setTimeout(() => this.#expire(id), expiresInMs) : undefined,
        settle: (answer) => {
          clearTimeout(entry.timer);
          withdraw?.removeEventListener("abort", onAbort);
          resolve(answer);
        },
      };
      entry.timer?.unref();
      this.#entries.set(id, entry);
      withdraw?.addEventListener("abort", onAbort, { once: true });
      this.outbox.publish({
        message: this.kind.requested(wire),
        conversationId: wire.conversation_id,
        fields: { ...fields, [FEATURE_EXPIRY]: { expires_at: expiresAt === null ? null : iso(expiresAt) } },
      });
    });
  }

  /** Its time ran out: withdraw it as usual, then tell `expiry` connections it expired. */
  #expire(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry || entry.expiresAt === null) return;
    this.answer(id, EXPIRED as A, this.kind.withdrawn(id));
    this.outbox.publish({
      message: {
        type: "message.complete",
        conversation_id: entry.wire.conversation_id,
        message_id: `notice-${newId()}`,
        text: this.kind.expiredNotice,
        kind: "notice",
        ts: iso(this.clock.now()),
      },
      conversationId: entry.wire.conversation_id,
      feature: FEATURE_EXPIRY,
    });
  }

  peek(id: string): W | undefined {
    return this.#entries.get(id)?.wire;
  }

  /**
   * Resolve a pending question: broadcast `resolved`, then hand the answer to the backend. A client's
   * answer is the `replyTo` of its `resolved` (the handler names the rule: every copy carries its request_id).
   */
  answer(id: string, answer: A, resolved: ServerMessage, replyTo?: Origin): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    // `*.resolved` does not name its conversation on the wire; the outbox still learns it.
    this.outbox.publish({
      message: resolved,
      conversationId: entry.wire.conversation_id,
      ...(replyTo === undefined ? {} : { replyTo }),
    });
    entry.settle(answer);
  }

  withdraw(id: string): void {
    this.answer(id, CANCELLED as A, this.kind.withdrawn(id));
  }

  withdrawRun(runId: string): void {
    for (const [id, entry] of [...this.#entries]) if (entry.runId === runId) this.withdraw(id);
  }

  /**
   * The pending questions of a conversation, each with the fields of the `features` a connection
   * enabled (`expiry`: `expires_at`; `activity`: an approval's call and preview).
   */
  list(conversationId: string, features: ReadonlySet<string>): W[] {
    return [...this.#entries.values()]
      .filter((e) => e.wire.conversation_id === conversationId)
      .map((e) => {
        let wire = e.wire;
        if (features.has(FEATURE_EXPIRY))
          wire = { ...wire, expires_at: e.expiresAt === null ? null : iso(e.expiresAt) };
        for (const [feature, fields] of Object.entries(e.fields))
          if (features.has(feature)) wire = { ...wire, ...fields };
        return wire;
      });
  }
}

/**
 * Approvals and clarifications: server-side IDs and pending state, YOLO
 * auto-answers, exactly-once resolution and withdrawal. The run engine asks
 * on behalf of its backend; the `approval.respond` / `clarify.respond`
 * handlers answer; `conversation.open` lists what is pending.
 */
export class Decisions {
  readonly #approvals: Gate<PendingApproval, PermissionAnswer>;
  readonly #clarifications: Gate<PendingClarification, ClarifyAnswer>;

  constructor(private readonly deps: DecisionsDeps) {
    this.#approvals = new Gate(deps.outbox, deps.clock, {
      requested: (wire: PendingApproval) => ({ type: "approval.request", ...wire }),
      // A withdrawn approval is failed closed: the agent is denied, and no client answered it.
      withdrawn: (approval_id) => ({
        type: "approval.resolved",
        approval_id,
        choice: "deny",
        accepted: false,
      }),
      expiredNotice: "The approval expired unanswered: the agent stopped waiting and treated it as denied.",
    });
    this.#clarifications = new Gate(deps.outbox, deps.clock, {
      requested: (wire: PendingClarification) => ({ type: "clarify.request", ...wire }),
      withdrawn: (clarify_id) => ({
        type: "clarify.resolved",
        clarify_id,
        accepted: false,
      }),
      expiredNotice: "The question expired unanswered: the agent carries on without an answer.",
    });
  }

  /**
   * A permission question of a backend. Only valid spec choices are offered,
   * in the spec's order. With YOLO on and "once" offered the server answers
   * "once" itself and nothing is broadcast (the tool's own events show what ran),
   * unless the run may not be auto-approved (a schedule's without `auto_approve`).
   */
  async askPermission(
    asker: Asker,
    question: PermissionQuestion,
    withdraw?: AbortSignal,
  ): Promise<PermissionAnswer> {
    if (withdraw?.aborted) return CANCELLED;
    const offered: unknown[] = Array.isArray(question?.choices) ? question.choices : [];
    const choices = APPROVAL_CHOICES.filter((c) => offered.includes(c));
    if (choices.length === 0) {
      this.deps.log.warn({ run: asker.runId }, "permission question without a valid choice refused");
      return CANCELLED;
    }
    if (choices.includes("once") && asker.autoApprove && this.deps.yolo(asker.conversationId)) {
      this.deps.log.info({ run: asker.runId }, "permission auto-approved once (YOLO)");
      return { outcome: "selected", choice: "once" };
    }
    const id = newId();
    const wire: PendingApproval = {
      approval_id: id,
      session_key: asker.sessionKey,
      conversation_id: asker.conversationId,
      run_id: asker.runId,
      command: String(question.command ?? ""),
      description: String(question.description ?? ""),
      choices,
      ts: iso(this.deps.clock.now()),
    };
    // `activity` connections see which call the approval is about, and what it would do.
    const activity: Record<string, unknown> = {};
    if (typeof question.toolCallId === "string") activity.tool_call_id = question.toolCallId;
    // Bounded as a tool event is: the preview is that call's content.
    if (Array.isArray(question.preview))
      activity.preview = boundDetail(wire, { kind: "other", content: question.preview }).content;
    const fields: Record<string, Record<string, unknown>> = {};
    if (Object.keys(activity).length > 0) fields[FEATURE_ACTIVITY] = activity;
    return this.#approvals.ask(id, wire, asker.runId, withdraw, question.expiresInMs, fields);
  }

  /**
   * A clarification of a backend. `choices` null (or empty) means free text
   * only, so free text is then always allowed.
   */
  async askClarification(
    asker: Asker,
    question: ClarifyQuestion,
    withdraw?: AbortSignal,
  ): Promise<ClarifyAnswer> {
    if (withdraw?.aborted) return CANCELLED;
    const given = Array.isArray(question?.choices)
      ? question.choices.filter((c): c is string => typeof c === "string")
      : [];
    const choices = given.length > 0 ? given : null;
    const id = newId();
    const wire: PendingClarification = {
      clarify_id: id,
      session_key: asker.sessionKey,
      conversation_id: asker.conversationId,
      run_id: asker.runId,
      question: String(question?.question ?? ""),
      choices,
      allow_free_text: choices === null || question.allowFreeText === true,
      ts: iso(this.deps.clock.now()),
    };
    return this.#clarifications.ask(id, wire, asker.runId, withdraw, question?.expiresInMs);
  }

  /**
   * `approval.respond`: unknown/answered/withdrawn → `approval_not_found`. Any of the four choices is
   * accepted whatever the question offered; the backend maps one its agent lacks to the nearest it
   * offers ({@link nearestChoice}). `origin` is the request the `approval.resolved` answers (none over HTTP).
   */
  respondApproval(msg: ClientMessageOf<"approval.respond">, origin?: Origin): void {
    if (!this.#approvals.peek(msg.approval_id)) throw APPROVAL_NOT_FOUND();
    // The reason is free text for the agent with a deny; it means nothing with an approval.
    const reason = msg.choice === "deny" && msg.reason !== undefined ? { reason: msg.reason } : {};
    this.#approvals.answer(
      msg.approval_id,
      { outcome: "selected", choice: msg.choice, ...reason },
      { type: "approval.resolved", approval_id: msg.approval_id, choice: msg.choice, accepted: true },
      origin,
    );
  }

  /**
   * `clarify.respond`: unknown/answered/withdrawn → `clarify_not_found`. Free text is accepted for
   * every question ("always render an Other affordance"), even one with `allow_free_text: false`;
   * the backend receives it verbatim. `origin` is the request the `clarify.resolved` answers.
   */
  respondClarify(msg: ClientMessageOf<"clarify.respond">, origin?: Origin): void {
    if (!this.#clarifications.peek(msg.clarify_id)) throw CLARIFY_NOT_FOUND();
    this.#clarifications.answer(
      msg.clarify_id,
      { outcome: "answered", response: msg.response },
      { type: "clarify.resolved", clarify_id: msg.clarify_id, accepted: true },
      origin,
    );
  }

  /**
   * The error of an answer whose ID is not pending (`approval_not_found` / `clarify_not_found`), or
   * undefined for a live one. The ID is checked before anything else, so a frame the decoder rejected
   * (an invalid choice or response) gets this when its ID is stale, and its own error only when live.
   */
  staleAnswer(answers: { approval_id: string } | { clarify_id: string }): ProtocolError | undefined {
    if ("approval_id" in answers)
      return this.#approvals.peek(answers.approval_id) ? undefined : APPROVAL_NOT_FOUND();
    return this.#clarifications.peek(answers.clarify_id) ? undefined : CLARIFY_NOT_FOUND();
  }

  /** Withdraw every question of a run (it ended or is being cancelled). */
  withdrawRun(runId: string): void {
    this.#approvals.withdrawRun(runId);
    this.#clarifications.withdrawRun(runId);
  }

  /** A pending approval, or undefined (unknown, answered or withdrawn). */
  approval(approvalId: string): PendingApproval | undefined {
    return this.#approvals.peek(approvalId);
  }

  /** A pending clarification, or undefined (unknown, answered or withdrawn). */
  clarification(clarifyId: string): PendingClarification | undefined {
    return this.#clarifications.peek(clarifyId);
  }

  /**
   * Pending approvals of a conversation, for `conversation.history.approvals`, with the fields of the
   * `features` the connection enabled (`expiry`: `expires_at`; `activity`: `tool_call_id`, `preview`).
   */
  approvals(conversationId: string, features: ReadonlySet<string> = NO_FEATURES): PendingApproval[] {
    return this.#approvals.list(conversationId, features);
  }

  /** Pending clarifications of a conversation, for `conversation.history.clarifications` (`expiry`: with `expires_at`). */
  clarifications(
    conversationId: string,
    features: ReadonlySet<string> = NO_FEATURES,
  ): PendingClarification[] {
    return this.#clarifications.list(conversationId, features);
  }
}

const APPROVAL_NOT_FOUND = () => new ProtocolError("approval_not_found", "Approval not found");
const CLARIFY_NOT_FOUND = () => new ProtocolError("clarify_not_found", "Clarification not found");
