package dev.pheby.client

// The `devices` extension (docs/protocol.md, "Extension: paired devices"): a phone pairs by scanning
// the owner's QR code (a pheby://pair URI), gets its own revocable secret once, and from then on
// connects with it like any client. The owner (master secret) opens codes, lists and revokes devices.

import dev.pheby.protocol.DeviceList
import dev.pheby.protocol.DeviceRevoke
import dev.pheby.protocol.DeviceRevoked
import dev.pheby.protocol.DeviceSnapshot
import dev.pheby.protocol.ErrorCode
import dev.pheby.protocol.Hello
import dev.pheby.protocol.PairCreate
import dev.pheby.protocol.PairCreated
import okhttp3.OkHttpClient
import java.net.URI
import java.net.URISyntaxException
import java.net.URLDecoder
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/**
 * What a pairing QR code holds: `pheby://pair?url=<public WebSocket URL>&code=<one-time code>`, both
 * percent-encoded (the `uri` of `pair.created`). [toString] hides the code, a credential until used.
 *
 * @property url The server's WebSocket URL (`wss://…/ws`): where the phone connects, now and later.
 * @property code The one-time pairing code (22..128 URL-safe base64 characters; 10 minutes, single use).
 */
data class PairingUri(val url: String, val code: String) {
    override fun toString(): String = "PairingUri(url=$url, code=***)"

    /** Parsing a scanned text. */
    companion object {
        private val CODE = Regex("[A-Za-z0-9_-]{22,128}")

        /**
         * The pairing of a scanned [text]. Throws [IllegalArgumentException] naming what is wrong: not a
         * `pheby://pair?` URI, a `url` that is not `ws://` or `wss://`, a missing or malformed `code`.
         */
        fun parse(text: String): PairingUri {
            val uri = try {
                URI(text.trim())
            } catch (e: URISyntaxException) {
                throw IllegalArgumentException("not a pairing URI (pheby://pair?url=…&code=…)", e)
            }
            require(uri.scheme.equals("pheby", ignoreCase = true) && uri.host == "pair") { "not a pairing URI: it must start with pheby://pair?" }
            // The first value of each name, percent-decoded (the URL inside is encoded: never split it by hand).
            val query = uri.rawQuery.orEmpty().split('&').filter { it.isNotEmpty() }.map { part ->
                decode(part.substringBefore('=')) to decode(part.substringAfter('=', ""))
            }.distinctBy { it.first }.toMap()
            val url = query["url"]
            require(url != null && (url.startsWith("ws://") || url.startsWith("wss://"))) { "pairing URI: url must be a ws:// or wss:// URL" }
            val code = query["code"]
            require(code != null && CODE.matches(code)) { "pairing URI: code is missing or malformed" }
            return PairingUri(url, code)
        }

        /** [parse], or null for anything that is not a valid pairing URI (e.g. another QR code). */
        fun parseOrNull(text: String): PairingUri? = try {
            parse(text)
        } catch (e: IllegalArgumentException) {
            null
        }

        private fun decode(text: String): String = URLDecoder.decode(text, Charsets.UTF_8)
    }
}

/**
 * A newly paired device: connect with `PhebyClient(PhebyClientOptions(url, deviceSecret))` from now on.
 * [toString] hides the secret.
 *
 * @property url The server's WebSocket URL (from the pairing URI).
 * @property deviceId The device's ID in the owner's [listDevices].
 * @property deviceSecret The device's own secret, **shown this once**: store it where the platform keeps
 *   secrets (Android Keystore-backed storage), never in logs or backups. It works wherever the master
 *   secret does (`hello`, the HTTP routes) until the owner revokes the device.
 */
data class PairedDevice(val url: String, val deviceId: String, val deviceSecret: String) {
    override fun toString(): String = "PairedDevice(url=$url, deviceId=$deviceId, deviceSecret=***)"
}

/**
 * Pairs this device with the server of a scanned pairing URI ([PairingUri.parse]): one connection that
 * says `hello` with the code instead of a secret (asking for `devices`, with [deviceName] for the owner's
 * list; the name the owner gave the code wins) and receives the device's secret, then closes. Throws
 * [IllegalArgumentException] for a text that is not a pairing URI, and [PhebyException]: `unauthorized`
 * for a wrong, used or expired code or a server without pairing (it counts towards the lockout, like a
 * wrong secret), `rate_limited` (with [PhebyException.retryAfter]), [PhebyException.TIMEOUT],
 * [PhebyException.CONNECTION_CLOSED]. If this throws after the server paired the device (the connection
 * dropped before `ready`), the device shows in the owner's list as never seen: pair again with a new code.
 */
suspend fun PhebyClient.Companion.pairDevice(
    uri: String,
    deviceName: String? = null,
    httpClient: OkHttpClient? = null,
    timeout: Duration = 30.seconds,
): PairedDevice {
    val pairing = PairingUri.parse(uri)
    // No secret yet: the options' secret is never sent (the hello carries the code), and nothing reconnects.
    val options = PhebyClientOptions(
        url = pairing.url,
        secret = "",
        features = setOf(Features.DEVICES),
        requestTimeout = timeout,
        reconnect = null,
        pingInterval = Duration.ZERO,
        httpClient = httpClient,
    )
    return PhebyClient(options).use { client ->
        val ready = client.connect { requestId ->
            Hello(requestId = requestId, protocolVersion = 1, features = listOf(Features.DEVICES), pairingCode = pairing.code, deviceName = deviceName)
        }
        val device = ready.device
            ?: throw PhebyException(ErrorCode.UNAUTHORIZED.value, "the server did not pair this device (it does not offer devices)")
        PairedDevice(pairing.url, device.deviceId, device.deviceSecret)
    }
}

/**
 * `pair.create` (owner only: the master secret, with [Features.DEVICES] asked for): a one-time pairing
 * code and its `pheby://pair` `uri` to show as a QR code, valid until `expiresAt` (10 minutes). [name]
 * becomes the device's name. Throws `not_implemented` when the server has no public URL
 * (`PHEBY_PUBLIC_URL`), `bad_request` for a device's connection or at 100 devices.
 */
suspend fun PhebyClient.createPairing(name: String? = null): PairCreated = request(PairCreate(name = name))

/** `device.list` (owner only): the paired devices, oldest first; `lastSeenAt` null for one never used. */
suspend fun PhebyClient.listDevices(): DeviceSnapshot = request(DeviceList())

/**
 * `device.revoke` (owner only): the device's connections close at once (`unauthorized` "device
 * revoked", 4401: final for its client), its transfers are cut, its push subscriptions removed and its
 * secret refused from then on. An unknown ID: `not_found`. Other `devices` clients get `device.revoked`.
 */
suspend fun PhebyClient.revokeDevice(deviceId: String): DeviceRevoked = request(DeviceRevoke(deviceId = deviceId))
