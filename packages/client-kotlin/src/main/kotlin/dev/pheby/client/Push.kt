package dev.pheby.client

// The `push` extension (docs/protocol.md, "Extension: push notifications"): the server's VAPID key,
// subscriptions, presence, and the HTTP answers a notification's actions send. The client asks for
// `push` by default (Features.PUSH in PhebyClientOptions.features); it adds no events to a connection.

import dev.pheby.protocol.ApprovalAnswer
import dev.pheby.protocol.ApprovalAnswerResponse
import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ClarifyAnswer
import dev.pheby.protocol.ClarifyAnswerResponse
import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.Presence
import dev.pheby.protocol.PresenceState
import dev.pheby.protocol.PushEventKind
import dev.pheby.protocol.PushKeys
import dev.pheby.protocol.PushList
import dev.pheby.protocol.PushSubscribe
import dev.pheby.protocol.PushSubscribed
import dev.pheby.protocol.PushSubscriptions
import dev.pheby.protocol.PushTest
import dev.pheby.protocol.PushTested
import dev.pheby.protocol.PushUnsubscribe
import dev.pheby.protocol.PushUnsubscribed

/**
 * The server's VAPID public key (`ready.push.vapid_public_key`: an uncompressed P-256 point,
 * base64url): register the UnifiedPush distributor (or a browser subscription) with it, so only this
 * server's messages are accepted. Null while not connected, or when the server did not enable `push`.
 */
val PhebyClient.vapidPublicKey: String?
    get() = (state.value as? ConnectionState.Open)?.ready?.push?.vapidPublicKey

/**
 * `push.subscribe`: subscribe a Web Push endpoint (a UnifiedPush `PushEndpoint`'s `url`, and its RFC 8291
 * keys `pubKeySet.pubKey` = [p256dh], `pubKeySet.auth` = [auth], base64url). The same [endpoint] again
 * updates its subscription (keys, name, events) and answers the same `subscriptionId`. [events] narrows
 * what is pushed (default: all four kinds). Throws `bad_request` for an `http` or private-address
 * endpoint (unless the operator allows them) or keys that are not a P-256 point and a 16-byte secret,
 * and `unknown_type` when the connection did not enable `push`.
 */
suspend fun PhebyClient.subscribePush(
    endpoint: String,
    p256dh: String,
    auth: String,
    deviceName: String? = null,
    events: List<PushEventKind>? = null,
): PushSubscribed = request(PushSubscribe(endpoint = endpoint, keys = PushKeys(p256dh = p256dh, auth = auth), deviceName = deviceName, events = events))

/** `push.unsubscribe`: remove a subscription. Another credential's or an unknown one: `not_found`. */
suspend fun PhebyClient.unsubscribePush(subscriptionId: String): PushUnsubscribed =
    request(PushUnsubscribe(subscriptionId = subscriptionId))

/**
 * `push.list`: the subscriptions this credential may see, oldest first (a device its own, the owner
 * all), each with its endpoint's origin only, its events, and its last success and error.
 */
suspend fun PhebyClient.listPush(): PushSubscriptions = request(PushList())

/**
 * `push.test`: send a test notification (a `PushTestPayload`) to one subscription; returns once the
 * push service answered: `ok`, its HTTP `status` (null without a response) and the `error`.
 */
suspend fun PhebyClient.testPush(subscriptionId: String): PushTested = request(PushTest(subscriptionId = subscriptionId))

/**
 * `presence` (no reply): tell the server whether the app is in front ([PresenceState.ACTIVE]) and which
 * conversation it shows, or that it is not ([PresenceState.BACKGROUND], e.g. in `onStop`). The server
 * skips a conversation's pushes only while some connection says it is active on it. Remembered and
 * said again on every new connection (a new connection has none), so call it on each change only.
 * Sent only on connections that enabled `push`; does nothing when [PhebyClientOptions.features] lacks it.
 */
fun PhebyClient.presence(state: PresenceState, conversationId: String? = null) {
    extension<PushPresence>()?.say(Presence(state = state, conversationId = conversationId))
}

/**
 * Answers an approval over HTTP (`POST /approvals/{approval_id}`, authenticated with the secret), as a
 * notification's action does: no WebSocket needed, so it works before [PhebyClient.connect] too. Every
 * client then gets `approval.resolved`. Throws [PhebyException] with [PhebyException.status]:
 * `approval_not_found` (404: answered elsewhere, withdrawn or unknown), `unauthorized` (401),
 * `rate_limited` (429, with [PhebyException.retryAfter]), `bad_request` (400), `too_large` (413).
 */
suspend fun PhebyClient.answerApproval(approvalId: String, choice: ApprovalChoice, reason: String? = null): ApprovalAnswerResponse =
    routes.postJson(
        listOf("approvals", approvalId),
        PhebyJson.encodeToString(ApprovalAnswer.serializer(), ApprovalAnswer(choice = choice, reason = reason)),
        ApprovalAnswerResponse.serializer(),
    )

/**
 * Answers a clarification over HTTP (`POST /clarify/{clarify_id}`) with one of its choices or free text,
 * like [answerApproval]: `clarify_not_found` (404) when it is no longer pending.
 */
suspend fun PhebyClient.answerClarification(clarifyId: String, response: String): ClarifyAnswerResponse =
    routes.postJson(
        listOf("clarify", clarifyId),
        PhebyJson.encodeToString(ClarifyAnswer.serializer(), ClarifyAnswer(response = response)),
        ClarifyAnswerResponse.serializer(),
    )

/** `push` inside the client: the last presence, said again first thing on every connection that enabled `push`. */
internal class PushPresence : ClientExtension {
    override val feature: String = Features.PUSH

    private var last: Presence? = null
    private var link: ExtensionLink? = null

    @Synchronized
    override fun onConnected(link: ExtensionLink) {
        this.link = link
        last?.let(link::send)
    }

    /** Remember [presence] and say it on the current connection (a closed one just refuses the frame). */
    @Synchronized
    fun say(presence: Presence) {
        last = presence
        link?.send(presence)
    }
}
