package dev.pheby.client

import dev.pheby.protocol.FEATURE_DELTA_APPEND

/**
 * The names of Pheby's negotiated extensions of v1, for [PhebyClientOptions.features] and to compare
 * with [PhebyClient.features] (docs/protocol.md, "Extensions: negotiation and gating"). They equal
 * `FEATURES` of `@pheby/protocol` (a test checks). A server ignores the names it does not support, so
 * asking is always safe; what it enabled is in `ready.features`.
 */
object Features {
    /** Append-only `message.delta` (the client stitches them; asked for by default). */
    const val DELTA_APPEND: String = FEATURE_DELTA_APPEND

    /** Web Push notifications, `presence`, answers from a notification (asked for by default; it adds no events). */
    const val PUSH: String = "push"

    /** `seq`, replay after a drop (`since_seq`), retry-safe sends (`client_message_id`). */
    const val RESUME: String = "resume"

    /** Follow-ups queued while a run is active (`chat.send` with `queue`). */
    const val QUEUE: String = "queue"

    /** Scheduled prompts. */
    const val SCHEDULES: String = "schedules"

    /** `expires_at` on approvals and questions. */
    const val EXPIRY: String = "expiry"

    /** Pairing with a one-time code, a revocable secret per device; the owner's `pair.create`, `device.list`, `device.revoke`. */
    const val DEVICES: String = "devices"

    /**
     * What [PhebyClientOptions.features] asks for by default, as `@pheby/client` does: [DELTA_APPEND],
     * [PUSH], [RESUME], [QUEUE]. Add to it for the others: `features = Features.DEFAULTS + Features.SCHEDULES`.
     */
    val DEFAULTS: Set<String> = setOf(DELTA_APPEND, PUSH, RESUME, QUEUE)

    /** Every name above, in `@pheby/protocol`'s order. */
    val ALL: List<String> = listOf(DELTA_APPEND, PUSH, RESUME, QUEUE, SCHEDULES, EXPIRY, DEVICES)
}
