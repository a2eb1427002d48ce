package dev.pheby.client

// The `expiry` extension (docs/protocol.md, "Extension: expiring questions"): approvals and questions
// carry `expires_at`, when the agent gives up on them. Not asked for by default (as in @pheby/client):
// add Features.EXPIRY to PhebyClientOptions.features. The field is in the generated models
// (`expiresAt`: absent without the feature, null when the server does not know); these helpers turn it
// into a countdown measured on the server's clock, which is what the protocol asks of a phone.

import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.PendingApproval
import dev.pheby.protocol.PendingClarification
import java.time.OffsetDateTime
import java.time.format.DateTimeParseException
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds

/**
 * How long the agent waits for an answer, counted from when the server sent the question:
 * `expires_at − ts`, both the server's clock, so a phone whose clock drifts still counts down right
 * (start the countdown when the frame arrives). Null when the connection did not enable
 * [Features.EXPIRY] or the server does not know (the question then waits until answered or withdrawn).
 * When it passes, the question is withdrawn (`approval.resolved` with `accepted = false`) and a notice
 * says it expired. Uses `java.time` (Android API 26, or core library desugaring).
 */
val ApprovalRequest.expiresIn: Duration? get() = timeLeft(ts, expiresAt)

/** [ApprovalRequest.expiresIn] of a question: `clarify.resolved` with `accepted = false` when it passes. */
val ClarifyRequest.expiresIn: Duration? get() = timeLeft(ts, expiresAt)

/**
 * The whole wait of a pending approval in `conversation.history`, from when it was asked (its `ts`).
 * A history carries no time of its own, so what is left of it can only be read against the phone's
 * clock (`expiresAt`); prefer the countdown of the live `approval.request` when the app saw it.
 */
val PendingApproval.expiresIn: Duration? get() = timeLeft(ts, expiresAt)

/** [PendingApproval.expiresIn] of a pending clarification in `conversation.history`. */
val PendingClarification.expiresIn: Duration? get() = timeLeft(ts, expiresAt)

/** `expiresAt − ts`, never negative; null when absent, null or not a date-time with an offset. */
private fun timeLeft(ts: String, expiresAt: OptionalNullable<String>): Duration? {
    val at = expiresAt.valueOrNull ?: return null
    return try {
        val millis = OffsetDateTime.parse(at).toInstant().toEpochMilli() - OffsetDateTime.parse(ts).toInstant().toEpochMilli()
        millis.coerceAtLeast(0).milliseconds
    } catch (e: DateTimeParseException) {
        null
    }
}
