package dev.pheby.client

import dev.pheby.protocol.FEATURES
import dev.pheby.protocol.FEATURE_ACTIVITY
import dev.pheby.protocol.FEATURE_CHANGES
import dev.pheby.protocol.FEATURE_DELTA_APPEND
import dev.pheby.protocol.FEATURE_DEVICES
import dev.pheby.protocol.FEATURE_EXPIRY
import dev.pheby.protocol.FEATURE_INBOX
import dev.pheby.protocol.FEATURE_MODES
import dev.pheby.protocol.FEATURE_PRIORITY
import dev.pheby.protocol.FEATURE_PUSH
import dev.pheby.protocol.FEATURE_QUEUE
import dev.pheby.protocol.FEATURE_RESUME
import dev.pheby.protocol.FEATURE_SCHEDULES
import dev.pheby.protocol.FEATURE_THOUGHTS
import dev.pheby.protocol.FEATURE_WORKSPACES
import dev.pheby.protocol.HELLO_FEATURES_SENT_MAX

/**
 * The names of Pheby's negotiated extensions of v1, for [PhebyClientOptions.features] and to compare
 * with [PhebyClient.features] (docs/protocol.md, "Extensions: negotiation and gating"): the generated
 * `FEATURE_*` constants of the models (from `@pheby/protocol`'s `schema/meta.json`). A server ignores
 * the names it does not support, so asking is always safe; what it enabled is in `ready.features`.
 */
object Features {
    /** Append-only `message.delta` (the client stitches them; asked for by default). */
    const val DELTA_APPEND: String = FEATURE_DELTA_APPEND

    /** Web Push notifications, `presence`, answers from a notification (asked for by default; it adds no events). */
    const val PUSH: String = FEATURE_PUSH

    /** `seq`, replay after a drop (`since_seq`), retry-safe sends (`client_message_id`). */
    const val RESUME: String = FEATURE_RESUME

    /** Follow-ups queued while a run is active (`chat.send` with `queue`). */
    const val QUEUE: String = FEATURE_QUEUE

    /** Scheduled prompts. */
    const val SCHEDULES: String = FEATURE_SCHEDULES

    /** `expires_at` on approvals and questions. */
    const val EXPIRY: String = FEATURE_EXPIRY

    /** Pairing with a one-time code, a revocable secret per device; the owner's `pair.create`, `device.list`, `device.revoke`. */
    const val DEVICES: String = FEATURE_DEVICES

    /**
     * What the agent does: each `tool.event`'s kind, title, locations and content (diffs, output), the
     * preview of an approval, `tool.get`, the plan (`plan.updated`) and context usage (`usage.updated`)
     * (asked for by default).
     */
    const val ACTIVITY: String = FEATURE_ACTIVITY

    /** The agent's modes (`modes.list`, `mode.set`, `mode.changed`) and slash commands (`commands.list`, `commands.snapshot`) (asked for by default). */
    const val MODES: String = FEATURE_MODES

    /**
     * The agent's thinking as it streams (`thought.delta`, stitched by the client, and `thought.complete`).
     * Not asked for by default: it can be the bulk of a run's bytes; ask for it where the app shows it.
     */
    const val THOUGHTS: String = FEATURE_THOUGHTS

    /**
     * The conversation list as an inbox: each entry's `status`, `pending`, `unread` (per reader), `preview`
     * and `archived`, `conversation.status` events, `conversation.read`, `conversation.archive`,
     * `conversation.search`, and lists without the archived conversations (asked for by default).
     */
    const val INBOX: String = FEATURE_INBOX

    /**
     * Several agents and workspaces on one server: `agents.list`, `agents.changed`, `workspaces.list`, the
     * agent, workspace and worktree of `conversation.create`, each conversation entry's `agent_id`,
     * `workspace_id` and `branch`, the list's filters, and `agent_id` on the global model and reasoning
     * calls (asked for by default).
     */
    const val WORKSPACES: String = FEATURE_WORKSPACES

    /**
     * What a conversation changed in its git working tree, for a review: `changes.list`, `changes.diff`,
     * and `changes.changed` at the end of a run that changed it (asked for by default).
     */
    const val CHANGES: String = FEATURE_CHANGES

    /**
     * What [PhebyClientOptions.features] asks for by default, as `@pheby/client` does: [DELTA_APPEND],
     * [PUSH], [RESUME], [QUEUE], [ACTIVITY], [MODES], [INBOX], [WORKSPACES], [CHANGES]. Add to it for the
     * others: `features = Features.DEFAULTS + Features.THOUGHTS`.
     */
    val DEFAULTS: Set<String> = setOf(DELTA_APPEND, PUSH, RESUME, QUEUE, ACTIVITY, MODES, INBOX, WORKSPACES, CHANGES)

    /** Every feature `@pheby/protocol` defines, in its order (`FEATURES`). */
    val ALL: List<String> = FEATURES

    /**
     * The `hello.features` the client sends for [wanted]: known features in `FEATURE_PRIORITY` order
     * (the ones that change most what the app can show first), then other names in the order given, at
     * most [HELLO_FEATURES_SENT_MAX] (a server of 0.1.0 closes a hello naming more with 4401): the rule
     * of `helloFeatureNames` of `@pheby/protocol`.
     */
    internal fun helloNames(wanted: Collection<String>): List<String> {
        val rank = { name: String -> FEATURE_PRIORITY.indexOf(name).let { if (it == -1) FEATURE_PRIORITY.size else it } }
        // sortedBy is stable: unknown names keep the caller's order after the known ones.
        return wanted.distinct().sortedBy(rank).take(HELLO_FEATURES_SENT_MAX)
    }
}
