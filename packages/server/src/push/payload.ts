import { createHash } from "node:crypto";
import { type ApprovalChoice, LIMITS, type PushEventKind, type PushPayloadKind } from "@pheby/protocol";
import { redactText } from "../util/redact.js";
import { iso } from "../util/time.js";
import type { Urgency } from "./sender.js";

/** Version of the payload format (`v`). */
export const PAYLOAD_VERSION = 1;

/**
 * Largest plaintext payload, in UTF-8 bytes: a single `aes128gcm` record adds an 86-byte header
 * (salt, record size, key id = the sender's 65-byte public key), a padding delimiter and a 16-byte
 * tag, so this keeps the encrypted body within the 4,096 bytes every push service must accept
 * (RFC 8030 §7.2, RFC 8291 §4). `LIMITS.pushPayloadBytes` in the contract.
 */
export const MAX_PLAINTEXT_BYTES = LIMITS.pushPayloadBytes;

/**
 * An approval whose expiry the backend does not tell is offered for this long: Hermes denies an
 * unanswered approval by itself after 60 s. Clarifications follow the same rule.
 */
export const DECISION_TTL_SECONDS = 60;
/** A finished run or an unsolicited message stays worth delivering for a day. */
export const RESULT_TTL_SECONDS = 24 * 60 * 60;
/** A test push is only worth delivering while someone waits for it. */
export const TEST_TTL_SECONDS = 60;

/**
 * A notification before encoding: `ids` are what every payload carries (ids, enums, times), `texts`
 * the user-visible text, left out with previews off or after a 413. Both are flat JSON.
 */
export interface PushNotification {
  kind: PushPayloadKind;
  /** The subscribable event a subscription must have chosen to get this (test: none, always sent). */
  event: PushEventKind | undefined;
  conversationId: string | undefined;
  /** When it happened (ISO-8601): the payload's `ts`. */
  ts: string;
  ids: Record<string, unknown>;
  texts: Record<string, string | string[] | null>;
  ttlSeconds: number;
  urgency: Urgency;
  /** The RFC 8030 `Topic`, also the payload's `tag`. */
  topic: string;
}

/**
 * The `Topic` of a conversation's notifications of one kind: the first 32 base64url characters
 * (192 bits) of SHA-256(conversation id, kind), the most RFC 8030 allows. A `resolved` push uses
 * the topic of what it replaces, so a push service still holding the question drops it.
 */
export function pushTopic(conversationId: string, kind: string): string {
  return createHash("sha256").update(`${conversationId}\n${kind}`).digest("base64url").slice(0, 32);
}

/** Seconds until `expiresAt` (at least 0), or the default when the backend did not say. */
function decisionTtl(expiresAt: number | undefined, now: number): number {
  return expiresAt === undefined ? DECISION_TTL_SECONDS : Math.max(0, Math.ceil((expiresAt - now) / 1000));
}

/** A payload text: at most `LIMITS.pushTextChars` code points (never a split surrogate pair). */
export function clip(text: string, max: number = LIMITS.pushTextChars): string {
  const points = Array.from(text);
  return points.length <= max ? text : `${points.slice(0, max - 1).join("")}…`;
}

/** The first non-blank line of a text, trimmed. */
export function firstLine(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .find((line) => line !== "") ?? ""
  );
}

/** At most this many clarification choices travel in a push. */
const CHOICES = 10;

/** What an approval push needs: the `approval.request` fields plus what the notifier knows. */
export interface ApprovalPushInput {
  approval_id: string;
  conversation_id: string;
  command: string;
  description: string;
  choices: readonly ApprovalChoice[];
  conversationName: string;
  /** The tool asking, when known (the run's running tool call). */
  tool?: string;
  /** When the backend will deny it by itself, if it says (ms since the epoch). */
  expiresAt?: number;
  /** `activity`: the diff blocks of the approval's preview (an edit), whose file and counts the body names. */
  diffs?: ReadonlyArray<{ display: string; additions: number; deletions: number }>;
}

/** An edit's file (and how many more) with its counts: `src/app.ts +12 −3`. */
export function editSummary(diffs: NonNullable<ApprovalPushInput["diffs"]>): string {
  const [first] = diffs;
  if (!first) return "";
  const additions = diffs.reduce((n, d) => n + d.additions, 0);
  const deletions = diffs.reduce((n, d) => n + d.deletions, 0);
  const more = diffs.length > 1 ? ` and ${diffs.length - 1} more file${diffs.length > 2 ? "s" : ""}` : "";
  return `${first.display}${more} +${additions} \u2212${deletions}`;
}

/**
 * `approval` (urgency high): the command preview is redacted like tool arguments; an edit's body
 * names its file and its `+additions −deletions` instead.
 */
export function approvalPush(input: ApprovalPushInput, now: number): PushNotification {
  const command = clip(redactText(input.command, 10_000));
  const edit =
    input.diffs && input.diffs.length > 0 ? clip(redactText(editSummary(input.diffs), 10_000)) : "";
  const preview = edit !== "" ? edit : command !== "" ? command : clip(redactText(input.description, 10_000));
  return {
    kind: "approval",
    event: "approval",
    conversationId: input.conversation_id,
    ts: iso(now),
    ids: {
      conversation_id: input.conversation_id,
      approval_id: input.approval_id,
      choices: [...input.choices],
      ...(input.expiresAt === undefined ? {} : { expires_at: iso(input.expiresAt) }),
    },
    texts: {
      title: clip(input.conversationName),
      body: preview,
      conversation_name: clip(input.conversationName),
      command_preview: preview,
      ...(input.tool === undefined ? {} : { tool: clip(input.tool) }),
    },
    ttlSeconds: decisionTtl(input.expiresAt, now),
    urgency: "high",
    topic: pushTopic(input.conversation_id, "approval"),
  };
}

/** What a clarification push needs. */
export interface ClarifyPushInput {
  clarify_id: string;
  conversation_id: string;
  question: string;
  choices: readonly string[] | null;
  allow_free_text: boolean;
  conversationName: string;
  expiresAt?: number;
}

/** `clarify` (urgency high): the question and its choices. */
export function clarifyPush(input: ClarifyPushInput, now: number): PushNotification {
  return {
    kind: "clarify",
    event: "clarify",
    conversationId: input.conversation_id,
    ts: iso(now),
    ids: {
      conversation_id: input.conversation_id,
      clarify_id: input.clarify_id,
      allow_free_text: input.allow_free_text,
      ...(input.expiresAt === undefined ? {} : { expires_at: iso(input.expiresAt) }),
    },
    texts: {
      title: clip(input.conversationName),
      body: clip(input.question),
      conversation_name: clip(input.conversationName),
      question: clip(input.question),
      choices: input.choices === null ? null : input.choices.slice(0, CHOICES).map((c) => clip(c)),
    },
    ttlSeconds: decisionTtl(input.expiresAt, now),
    urgency: "high",
    topic: pushTopic(input.conversation_id, "clarify"),
  };
}

/** What a finished-run push needs (never built for a cancelled run). */
export interface RunFinishedPushInput {
  conversation_id: string;
  run_id: string;
  status: "completed" | "failed";
  /** The final answer (completed) or the run's error (failed). */
  text: string;
  conversationName: string;
  /** `changes`: the conversation's changes, when the run moved them (`changes.changed` was sent). */
  changes?: RunChanges;
}

/** A run's changes as a finished-run push names them: files, lines added and removed against the base. */
export interface RunChanges {
  files: number;
  additions: number;
  deletions: number;
}

/** The end of a finished-run push's body when the run moved the changes: " · 3 files +12 −4". */
export function changesSuffix({ files, additions, deletions }: RunChanges): string {
  return ` · ${files} ${files === 1 ? "file" : "files"} +${additions} \u2212${deletions}`;
}

/**
 * `run_finished` (urgency normal): completed or failed, with the first line of the answer or error,
 * and the run's changes at the end of the body when it moved them (text only: the payload's shape
 * stays as it was).
 */
export function runFinishedPush(input: RunFinishedPushInput, now: number): PushNotification {
  const { status, changes, ...rest } = input;
  const push = resultPush("run_finished", rest, { status }, now);
  if (changes) {
    const suffix = changesSuffix(changes);
    const first = clip(firstLine(input.text), LIMITS.pushTextChars - Array.from(suffix).length);
    push.texts.body = first === "" ? suffix.replace(/^ · /, "") : `${first}${suffix}`;
  }
  return push;
}

/** What an unsolicited-message push needs. */
export interface MessagePushInput {
  conversation_id: string;
  run_id: string;
  text: string;
  conversationName: string;
}

/** `message` (urgency normal): unsolicited assistant output (a schedule, background output). */
export function messagePush(input: MessagePushInput, now: number): PushNotification {
  return resultPush("message", input, {}, now);
}

/** A run's outcome as a push: the conversation as title, the text's first line as body, kept a day. */
function resultPush(
  kind: "run_finished" | "message",
  input: MessagePushInput,
  extra: Record<string, unknown>,
  now: number,
): PushNotification {
  return {
    kind,
    event: kind,
    conversationId: input.conversation_id,
    ts: iso(now),
    ids: { conversation_id: input.conversation_id, run_id: input.run_id, ...extra },
    texts: {
      title: clip(input.conversationName),
      body: clip(firstLine(input.text)),
      conversation_name: clip(input.conversationName),
    },
    ttlSeconds: RESULT_TTL_SECONDS,
    urgency: "normal",
    topic: pushTopic(input.conversation_id, kind),
  };
}

/** What a `resolved` push needs: the question that was answered or withdrawn. */
export type ResolvedPushInput = { conversation_id: string; expiresAt?: number } & (
  | { approval_id: string }
  | { clarify_id: string }
);

/**
 * `resolved`: replaces an approval or clarification push (same `Topic` and tag, same urgency so it
 * travels as fast) once the question was answered or withdrawn, so a lock screen stops offering a
 * stale action. Only ids: it carries nothing to show.
 */
export function resolvedPush(input: ResolvedPushInput, now: number): PushNotification {
  const of = "approval_id" in input ? "approval" : "clarify";
  return {
    kind: "resolved",
    event: of,
    conversationId: input.conversation_id,
    ts: iso(now),
    ids: {
      conversation_id: input.conversation_id,
      ...("approval_id" in input ? { approval_id: input.approval_id } : { clarify_id: input.clarify_id }),
    },
    texts: {},
    ttlSeconds: Math.max(1, decisionTtl(input.expiresAt, now)),
    urgency: "high",
    topic: pushTopic(input.conversation_id, of),
  };
}

/** `test` (`push.test`): proves the path end to end; sent whatever events the subscription chose. */
export function testPush(subscriptionId: string, now: number): PushNotification {
  return {
    kind: "test",
    event: undefined,
    conversationId: undefined,
    ts: iso(now),
    ids: { subscription_id: subscriptionId },
    texts: { title: "Pheby", body: "Test notification" },
    ttlSeconds: TEST_TTL_SECONDS,
    urgency: "normal",
    topic: pushTopic(subscriptionId, "test"),
  };
}

/** What a `schedule` push needs: the agent's schedule awaiting confirmation. */
export interface SchedulePushInput {
  conversation_id: string;
  schedule_id: string;
  prompt: string;
  conversationName: string;
}

/**
 * `schedule` (urgency normal): the agent made a schedule that does not run until the user confirms
 * it. Sent whatever events a subscription chose, and never suppressed by presence: the user must
 * hear that the agent tried to plant work. The prompt preview is redacted like a command.
 */
export function schedulePush(input: SchedulePushInput, now: number): PushNotification {
  const preview = clip(redactText(firstLine(input.prompt), 10_000));
  return {
    kind: "schedule",
    event: undefined,
    conversationId: undefined,
    ts: iso(now),
    ids: { conversation_id: input.conversation_id, schedule_id: input.schedule_id },
    texts: {
      title: "The agent made a schedule: confirm it to run it",
      body: clip(`${input.conversationName}: ${preview}`),
      conversation_name: clip(input.conversationName),
      prompt_preview: preview,
    },
    ttlSeconds: RESULT_TTL_SECONDS,
    urgency: "normal",
    topic: pushTopic(input.schedule_id, "schedule"),
  };
}

/**
 * The JSON payload of a notification: `{ v, kind, …ids, …texts }`, or without the texts (`withText`
 * false: previews off, or the retry after a 413). Texts are shortened, longest first, until the
 * payload fits {@link MAX_PLAINTEXT_BYTES}; ids alone always fit.
 */
export function encodePayload(notification: PushNotification, withText: boolean): string {
  const base = {
    v: PAYLOAD_VERSION,
    kind: notification.kind,
    tag: notification.topic,
    ts: notification.ts,
    ...notification.ids,
  };
  if (!withText) return JSON.stringify(base);
  const texts: Record<string, string | string[] | null> = { ...notification.texts };
  for (;;) {
    const payload = JSON.stringify({ ...base, ...texts });
    if (Buffer.byteLength(payload, "utf8") <= MAX_PLAINTEXT_BYTES) return payload;
    const longest = Object.keys(texts).sort((a, b) => size(texts[b]) - size(texts[a]))[0];
    const shorter = longest === undefined ? undefined : shorten(texts[longest]!);
    if (longest === undefined || shorter === undefined) return JSON.stringify(base);
    texts[longest] = shorter;
  }
}

const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8");

/**
 * A shorter form of a text field, or undefined when it cannot get shorter: a text is halved by code
 * points (no surrogate pair is split) and marked with "…", a list loses its last item.
 */
function shorten(value: string | string[] | null): string | string[] | null | undefined {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.slice(0, -1);
  const points = Array.from(value);
  if (points.length === 0) return undefined;
  return points.length <= 2 ? "" : `${points.slice(0, Math.floor(points.length / 2)).join("")}…`;
}
