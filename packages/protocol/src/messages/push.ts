import { z } from "zod/v3";
import { boundedText, event, OpaqueId, request, Timestamp, uniqueArray, withFieldRules } from "../common.js";
import {
  APPROVAL_CHOICES,
  LIMITS,
  PRESENCE_STATES,
  PUSH_EVENT_KINDS,
  type PUSH_PAYLOAD_KINDS,
  RUN_STATUSES,
} from "../constants.js";
import { DeviceName } from "./devices.js";

// The `push` extension (FEATURE_PUSH): Web Push (RFC 8030) with message encryption (RFC 8291) and
// VAPID (RFC 8292), to a UnifiedPush distributor or a browser push service alike.

/** `ready.push`: what a client needs to subscribe. */
export const PushServerInfo = z
  .object({
    vapid_public_key: z
      .string()
      .regex(/^[A-Za-z0-9_-]{87}$/, "must be 87 base64url characters")
      .describe(
        "The server's VAPID public key (RFC 8292): an uncompressed P-256 point, 65 bytes, base64url without padding; the applicationServerKey of a subscription",
      ),
  })
  .describe("The server's push settings");

/** `push.subscribe.keys`: the subscription's RFC 8291 keys, as the push API or UnifiedPush hands them over. */
export const PushKeys = z
  .object({
    p256dh: z
      .string()
      .regex(/^[A-Za-z0-9_-]{87}=?$/, "must be 87 base64url characters")
      .describe("The user agent's P-256 public key: 65 bytes, base64url (padding optional)"),
    auth: z
      .string()
      .regex(/^[A-Za-z0-9_-]{22}(==)?$/, "must be 22 base64url characters")
      .describe("The authentication secret: 16 bytes, base64url (padding optional)"),
  })
  .describe("Encryption keys of a push subscription");

const pushEvents = uniqueArray(z.enum(PUSH_EVENT_KINDS), PUSH_EVENT_KINDS.length, 1);

/** `push.subscribe`: register (or update, for the same endpoint) a push subscription. */
export const PushSubscribe = request(
  "push.subscribe",
  {
    endpoint: z
      .string()
      .max(LIMITS.pushEndpointChars)
      .url()
      .describe(
        "The push endpoint (a capability: never logged or shown in full). https, and not a private address, unless the server allows private endpoints",
      ),
    keys: PushKeys,
    device_name: DeviceName.optional().describe("Shown in push.list"),
    events: pushEvents.optional().describe("Which events to push (distinct, at least one); default: all"),
  },
  "Subscribe to push notifications",
);

/** `push.subscribed`: reply to `push.subscribe`. */
export const PushSubscribed = event(
  "push.subscribed",
  { subscription_id: z.string().describe("The same ID when the endpoint was already subscribed") },
  "A push subscription was created or updated",
);

/** `push.unsubscribe`: remove a push subscription. */
export const PushUnsubscribe = request(
  "push.unsubscribe",
  { subscription_id: OpaqueId },
  "Remove a push subscription",
);

/** `push.unsubscribed`: reply to `push.unsubscribe`. */
export const PushUnsubscribed = event(
  "push.unsubscribed",
  { subscription_id: z.string() },
  "A push subscription was removed",
);

/** One row of `push.subscriptions`. */
export const PushSubscriptionInfo = z
  .object({
    subscription_id: z.string(),
    device_name: z.string().nullable(),
    endpoint_origin: z
      .string()
      .describe("Scheme, host and port of the endpoint only (the full endpoint is a capability)"),
    events: z.array(z.enum(PUSH_EVENT_KINDS)),
    created_at: Timestamp,
    last_success_at: Timestamp.nullable(),
    last_error: z
      .string()
      .nullable()
      .describe(
        'Null, or "not delivered" when the last delivery failed (no status or reason: see push.tested); cleared by a success',
      ),
  })
  .describe("A push subscription");

/** `push.list`: list the push subscriptions this credential may see. */
export const PushList = request("push.list", {}, "List push subscriptions");

/** `push.subscriptions`: reply to `push.list`. */
export const PushSubscriptions = event(
  "push.subscriptions",
  { subscriptions: z.array(PushSubscriptionInfo).max(LIMITS.pushSubscriptions).describe("Oldest first") },
  "Push subscriptions",
);

/** `push.test`: send a test notification to one subscription and report the outcome. */
export const PushTest = request("push.test", { subscription_id: OpaqueId }, "Send a test notification");

/**
 * `push.tested`: reply to `push.test`, once the push service answered (or the attempt failed). It
 * says only whether the test was delivered: `status` is always null and `error` null or
 * `"not delivered"`, whatever the endpoint's host answered (the fields keep their types so older
 * clients decode it).
 */
export const PushTested = event(
  "push.tested",
  {
    subscription_id: z.string(),
    ok: z.boolean().describe("true when the push service accepted the message (2xx)"),
    status: z
      .number()
      .int()
      .nullable()
      .describe(
        "Always null: the server does not tell what an endpoint's host answered (it would be a port scanner)",
      ),
    error: z.string().nullable().describe('Null when delivered, else "not delivered"'),
  },
  "Outcome of a test notification",
);

/** `presence`: what this client's UI shows. No reply; a malformed one gets `bad_request`. */
export const Presence = request(
  "presence",
  {
    state: z.enum(PRESENCE_STATES).describe("active: the UI is in front; background: it is not"),
    conversation_id: OpaqueId.optional().describe("The conversation on screen, if any"),
  },
  "Say whether the UI is in front, and which conversation it shows",
);

// The push payload: the JSON object inside an encrypted push message (RFC 8291), one per kind.

const pushText = boundedText({ max: LIMITS.pushTextChars });

/** The fields every push payload starts with: its version, its `kind`, how to show it. */
const payloadHead = <K extends (typeof PUSH_PAYLOAD_KINDS)[number]>(kind: K) => ({
  v: z.literal(1).describe("Payload version"),
  kind: z.literal(kind),
  tag: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/, "must be 1 to 32 base64url characters")
    .describe(
      "The RFC 8030 Topic it was sent with: show the notification under this tag, so a later payload with the same tag replaces it",
    ),
  ts: Timestamp,
  title: pushText
    .optional()
    .describe("Absent when the server sends no text (privacy setting, or a retry without text)"),
  body: pushText.optional().describe("Absent when the server sends no text"),
});

const expiresAt = Timestamp.optional().describe("When the agent gives up on it; absent when unknown");

// The reader's unread total over unarchived conversations (`inbox`), for the app's badge; older
// servers and servers without the inbox feature leave it out.
const unread = z
  .number()
  .int()
  .nonnegative()
  .optional()
  .describe("The reader's unread messages over unarchived conversations (for a badge); absent without inbox");

const conversationFields = {
  conversation_id: z.string(),
  conversation_name: pushText.optional().describe("Absent when the server sends no text"),
  unread,
};

/** Push payload `approval`: an approval is waiting (sent with `Urgency: high`). */
export const PushApprovalPayload = z
  .object({
    ...payloadHead("approval"),
    ...conversationFields,
    approval_id: z.string(),
    tool: pushText.optional().describe("The tool asking; absent when the server sends no text"),
    command_preview: pushText
      .optional()
      .describe("A short, redacted preview of the command; absent when the server sends no text"),
    choices: z.array(z.enum(APPROVAL_CHOICES)).min(1).describe("The choices offered, as in approval.request"),
    expires_at: expiresAt,
  })
  .describe("Push payload: an approval is waiting");

/** Push payload `clarify`: the agent asks a question (`Urgency: high`). */
export const PushClarifyPayload = z
  .object({
    ...payloadHead("clarify"),
    ...conversationFields,
    clarify_id: z.string(),
    question: pushText.optional().describe("Absent when the server sends no text"),
    choices: z
      .array(pushText)
      .nullable()
      .optional()
      .describe("The choices offered (null: free text only); absent when the server sends no text"),
    allow_free_text: z.boolean(),
    expires_at: expiresAt,
  })
  .describe("Push payload: the agent asks a question");

/** Push payload `run_finished`: a run a client started ended (never for one the owner cancelled). */
export const PushRunFinishedPayload = z
  .object({
    ...payloadHead("run_finished"),
    ...conversationFields,
    run_id: z.string(),
    status: z.enum(RUN_STATUSES),
  })
  .describe("Push payload: a run finished (body: the answer's first line)");

/** Push payload `message`: unsolicited assistant output (a schedule, background output, a notification). */
export const PushMessagePayload = z
  .object({
    ...payloadHead("message"),
    ...conversationFields,
    run_id: z.string().optional().describe("The unsolicited run, when the output came from one"),
  })
  .describe("Push payload: unsolicited assistant output");

/** Push payload `resolved`: an approval or question was answered or withdrawn; drop its notification. */
export const PushResolvedPayload = withFieldRules(
  z
    .object({
      ...payloadHead("resolved"),
      conversation_id: z.string(),
      unread,
      approval_id: z.string().optional(),
      clarify_id: z.string().optional(),
    })
    .describe(
      "Push payload: an approval or question no longer needs an answer (exactly one of approval_id, clarify_id)",
    ),
  [{ kind: "exactlyOne", keys: ["approval_id", "clarify_id"] }],
);

/** Push payload `test`: from `push.test`. */
export const PushTestPayload = z
  .object({ ...payloadHead("test"), subscription_id: z.string() })
  .describe("Push payload: a test notification");

/**
 * Push payload `schedule`: the agent made a schedule that does not run until the user confirms it
 * (`schedule.update { schedule_id, enabled: true }`). Sent to every subscription, whatever its events.
 */
export const PushSchedulePayload = z
  .object({
    ...payloadHead("schedule"),
    ...conversationFields,
    schedule_id: z.string(),
    prompt_preview: pushText
      .optional()
      .describe("The schedule's prompt, shortened and redacted; absent when the server sends no text"),
  })
  .describe("Push payload: the agent made a schedule that waits for confirmation");

/** Every push payload schema, keyed by its `kind`. */
export const pushPayloadSchemas = {
  approval: PushApprovalPayload,
  clarify: PushClarifyPayload,
  run_finished: PushRunFinishedPayload,
  message: PushMessagePayload,
  resolved: PushResolvedPayload,
  test: PushTestPayload,
  schedule: PushSchedulePayload,
} as const satisfies Record<(typeof PUSH_PAYLOAD_KINDS)[number], z.ZodTypeAny>;
