package dev.pheby.client

import dev.pheby.protocol.ErrorCode
import dev.pheby.protocol.Ready
import okhttp3.OkHttpClient
import kotlin.math.pow
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/**
 * Settings of a [PhebyClient].
 *
 * @property url The WebSocket URL: `wss://host/ws` behind Caddy, `ws://127.0.0.1:8620/ws` locally. The
 *   attachment routes live next to it (the URL without its trailing `/ws`, as http(s)).
 * @property secret The server's shared secret. Sent in `hello` and as the `Authorization: Bearer` of file
 *   transfers; never logged ([toString] hides it).
 * @property features The Pheby extensions to ask for in `hello.features` ([Features]); `ready.features`
 *   (see [ConnectionState.Open.features]) says which the server enabled. The hello names at most 16
 *   (`HELLO_FEATURES_SENT_MAX`), known ones first in `FEATURE_PRIORITY` order. Asked for by default, as
 *   `@pheby/client` does: [Features.DELTA_APPEND] (either way `message.delta` events carry the whole
 *   draft), [Features.PUSH] (adds no events), [Features.RESUME] (`seq` on conversation frames, replay
 *   after a drop, retry-safe sends), [Features.QUEUE] (`queue.changed` events), [Features.ACTIVITY]
 *   (tool detail, approval previews, plan and usage), [Features.MODES] (modes and slash commands),
 *   [Features.INBOX] (status, unread, preview and archive on list entries, `conversation.status` events),
 *   [Features.WORKSPACES] (agents, workspaces and worktrees; `agents.changed` events) and
 *   [Features.CHANGES] (what a conversation changed in its git working tree; `changes.changed` events).
 *   Names the client has no behaviour for are still asked for; their frames reach [PhebyClient.events]
 *   as they come. Add [Features.THOUGHTS], [Features.SCHEDULES] or [Features.EXPIRY] with
 *   `Features.DEFAULTS + Features.THOUGHTS`.
 * @property requestTimeout How long a request waits for its reply, the handshake included.
 * @property reconnect Automatic reconnect after a drop; null disables it.
 * @property pingInterval WebSocket ping interval; a missed pong drops the connection (and so reconnects),
 *   which is how a dead path after a network change is noticed. Zero disables pings.
 * @property httpClient The OkHttp client to share (its connection pool, dispatcher and settings); the
 *   client derives one with [pingInterval] from it. Null: a client of its own, shut down by
 *   [PhebyClient.close].
 */
data class PhebyClientOptions(
    val url: String,
    val secret: String,
    val features: Set<String> = Features.DEFAULTS,
    val requestTimeout: Duration = 30.seconds,
    val reconnect: ReconnectPolicy? = ReconnectPolicy(),
    val pingInterval: Duration = 25.seconds,
    val httpClient: OkHttpClient? = null,
) {
    /** Everything but the secret. */
    override fun toString(): String =
        "PhebyClientOptions(url=$url, secret=***, features=$features, requestTimeout=$requestTimeout, " +
            "reconnect=$reconnect, pingInterval=$pingInterval)"
}

/**
 * When to reconnect after a drop, following the close codes of docs/protocol.md: never after 4401
 * (`unauthorized`) or 4426 (`version_mismatch`); after 4429 (locked out) once the seconds its reason
 * gives ("retry after N s") have passed, or [lockedOutDelay] when it gives none; after anything else
 * (1001, 1006, 1009, 4408, 4503, a failed attempt) with exponential backoff and full jitter.
 *
 * @property initialDelay The ceiling of the first backoff delay.
 * @property maxDelay The highest ceiling.
 * @property factor Growth of the ceiling per attempt.
 * @property lockedOutDelay The wait after 4429 when the server named no time.
 */
data class ReconnectPolicy(
    val initialDelay: Duration = 500.milliseconds,
    val maxDelay: Duration = 30.seconds,
    val factor: Double = 2.0,
    val lockedOutDelay: Duration = 60.seconds,
) {
    /**
     * The delay before reconnect attempt [attempt] (0 for the first): uniform in
     * `[0, min(maxDelay, initialDelay · factor^attempt)]` ("full jitter"), so the phones of a restarted
     * server do not all come back at once.
     */
    fun backoff(attempt: Int, random: Random = Random.Default): Duration {
        val ceiling = minOf(maxDelay.inWholeMilliseconds.toDouble(), initialDelay.inWholeMilliseconds * factor.pow(attempt))
        return (random.nextDouble() * ceiling).toLong().milliseconds
    }

    /** The wait before reconnecting after [failure]: the lockout's, or the backoff of [attempt]. */
    fun delayAfter(failure: PhebyException, attempt: Int, random: Random = Random.Default): Duration =
        if (failure.code == ErrorCode.RATE_LIMITED.value) failure.retryAfter ?: lockedOutDelay else backoff(attempt, random)
}

/** Where a [PhebyClient]'s connection stands; observe it as [PhebyClient.state]. */
sealed interface ConnectionState {
    /** Not connected yet: call [PhebyClient.connect]. */
    data object Idle : ConnectionState

    /** The first connection is being opened. */
    data object Connecting : ConnectionState

    /** Connected and authenticated. [features] are the extensions the server enabled (`ready.features`). */
    data class Open(val ready: Ready, val features: Set<String>) : ConnectionState

    /** The connection dropped ([cause]); attempt [attempt] starts after [delay]. */
    data class Reconnecting(val attempt: Int, val delay: Duration, val cause: PhebyException) : ConnectionState

    /**
     * Final: the server refused the secret (`unauthorized`) or the protocol version (`version_mismatch`).
     * Nothing is retried; [PhebyClient.connect] tries again (after the secret or the app was fixed).
     */
    data class Failed(val error: PhebyException) : ConnectionState

    /** Closed by [PhebyClient.close] or a cancelled [PhebyClient.connect] (`error` null), by a failed [PhebyClient.connect], or by a drop with reconnect off. */
    data class Closed(val error: PhebyException?) : ConnectionState
}
