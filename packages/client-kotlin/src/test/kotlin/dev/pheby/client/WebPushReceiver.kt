package dev.pheby.client

import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.PushPayload
import dev.pheby.protocol.decodePushPayload
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runInterruptible
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import mockwebserver3.Dispatcher
import mockwebserver3.MockResponse
import mockwebserver3.MockWebServer
import mockwebserver3.RecordedRequest
import okhttp3.Headers
import java.math.BigInteger
import java.net.InetAddress
import java.nio.ByteBuffer
import java.security.KeyFactory
import java.security.KeyPairGenerator
import java.security.PublicKey
import java.security.SecureRandom
import java.security.Signature
import java.security.interfaces.ECPublicKey
import java.security.spec.ECGenParameterSpec
import java.security.spec.ECPoint
import java.security.spec.ECPublicKeySpec
import java.util.Base64
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit
import javax.crypto.Cipher
import javax.crypto.KeyAgreement
import javax.crypto.Mac
import javax.crypto.spec.GCMParameterSpec
import javax.crypto.spec.SecretKeySpec

/**
 * A Web Push receiver that really decrypts, written from the RFCs with `java.security`/`javax.crypto`
 * only: it plays the push service and the user agent at once, on 127.0.0.1 (the server under test needs
 * `PHEBY_PUSH_ALLOW_PRIVATE=true` to reach it). Each [Subscription] has its own P-256 key pair and auth
 * secret; a push is decrypted (RFC 8291 `aes128gcm`: ECDH, HKDF-SHA256, AES-128-GCM records), its VAPID
 * header verified (RFC 8292: an ES256 JWT for this origin, signed by the key it names), and its
 * plaintext decoded with the models' `decodePushPayload`, as an app does after its connector decrypted.
 * Every push is answered 201.
 */
class WebPushReceiver : AutoCloseable {
    private val subscriptions = ConcurrentHashMap<String, Subscription>()
    private val server = MockWebServer().apply {
        dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest): MockResponse {
                val subscription = subscriptions[request.url.encodedPath.removePrefix("/push/")]
                    ?: return MockResponse.Builder().code(404).build()
                try {
                    subscription.received += subscription.decode(request.headers, request.body?.toByteArray() ?: ByteArray(0))
                } catch (e: Exception) {
                    errors += "${subscription.name}: $e"
                }
                return MockResponse.Builder().code(201).build()
            }
        }
        start(InetAddress.getByName("127.0.0.1"), 0)
    }

    /** The push service's origin, as `push.list` shows it (`endpoint_origin`) and VAPID's `aud` names it. */
    val origin: String = server.url("/").toString().removeSuffix("/")

    /** Pushes that failed to decrypt, verify or decode (a test asserts there are none). */
    val errors = CopyOnWriteArrayList<String>()

    /** A new subscription: its endpoint and keys, as a UnifiedPush connector hands them to the app. */
    fun subscription(name: String): Subscription = Subscription(name).also { subscriptions[name] = it }

    override fun close() = server.close()

    /** A push as the app sees it once decrypted, with what the push service saw. */
    data class Push(
        val payload: PushPayload,
        val plaintext: String,
        val headers: Headers,
        /** The VAPID key (`k`) whose signature verified. */
        val vapidKey: String,
        /** The VAPID JWT's `sub`. */
        val vapidSubject: String,
    )

    /** One subscription of the receiver: a user agent's key pair and auth secret behind one endpoint. */
    inner class Subscription(val name: String) {
        private val keys = KeyPairGenerator.getInstance("EC").apply { initialize(ECGenParameterSpec("secp256r1")) }.generateKeyPair()
        private val publicKey = keys.public as ECPublicKey
        private val authSecret = ByteArray(16).also(SecureRandom()::nextBytes)
        internal val received = LinkedBlockingQueue<Push>()

        /** The endpoint URL for `push.subscribe`. */
        val endpoint: String = server.url("/push/$name").toString()

        /** The user agent's public key: an uncompressed P-256 point, base64url (RFC 8291's `p256dh`). */
        val p256dh: String = base64url(uncompressed(publicKey))

        /** The 16-byte authentication secret, base64url. */
        val auth: String = base64url(authSecret)

        /** The next push that arrived, waiting for it (off the test's thread) up to a minute. */
        suspend fun next(): Push = runInterruptible(Dispatchers.IO) {
            checkNotNull(received.poll(60, TimeUnit.SECONDS)) { "no push for $name within 60 s (errors: $errors)" }
        }

        internal fun decode(headers: Headers, body: ByteArray): Push {
            check(headers["Content-Encoding"] == "aes128gcm") { "Content-Encoding is ${headers["Content-Encoding"]}, not aes128gcm" }
            val (key, subject) = verifyVapid(headers["Authorization"])
            val plaintext = decrypt(body).toString(Charsets.UTF_8)
            return Push(decodePushPayload(plaintext), plaintext, headers, key, subject)
        }

        /** RFC 8291 §3.4 key derivation, then the RFC 8188 records: NONCE XOR SEQ, padding stripped. */
        private fun decrypt(body: ByteArray): ByteArray {
            val header = ByteBuffer.wrap(body)
            val salt = ByteArray(16).also(header::get)
            val recordSize = header.int
            val keyIdLength = header.get().toInt() and 0xff
            check(keyIdLength == 65) { "keyid is $keyIdLength bytes, not an uncompressed P-256 key" }
            val serverKey = ByteArray(65).also(header::get)
            val secret = KeyAgreement.getInstance("ECDH").run {
                init(keys.private)
                doPhase(pointToKey(serverKey, publicKey), true)
                generateSecret()
            }
            val keyInfo = "WebPush: info\u0000".toByteArray() + uncompressed(publicKey) + serverKey
            val ikm = hkdf(authSecret, secret, keyInfo, 32)
            val cek = hkdf(salt, ikm, "Content-Encoding: aes128gcm\u0000".toByteArray(), 16)
            val nonce = hkdf(salt, ikm, "Content-Encoding: nonce\u0000".toByteArray(), 12)
            val records = body.copyOfRange(header.position(), body.size)
            val plain = java.io.ByteArrayOutputStream()
            var offset = 0
            var seq = 0L
            while (offset < records.size) {
                val end = minOf(offset + recordSize, records.size)
                val iv = nonce.copyOf()
                for (i in 0 until 8) iv[11 - i] = (iv[11 - i].toInt() xor ((seq ushr (8 * i)).toInt() and 0xff)).toByte()
                val cipher = Cipher.getInstance("AES/GCM/NoPadding")
                cipher.init(Cipher.DECRYPT_MODE, SecretKeySpec(cek, "AES"), GCMParameterSpec(128, iv))
                val record = cipher.doFinal(records, offset, end - offset)
                var last = record.size - 1
                while (last >= 0 && record[last] == 0.toByte()) last--
                val delimiter = if (end == records.size) 2 else 1
                check(last >= 0 && record[last].toInt() == delimiter) { "bad padding delimiter in record $seq" }
                plain.write(record, 0, last)
                offset = end
                seq++
            }
            return plain.toByteArray()
        }

        /** RFC 8292: `vapid t=<JWT>, k=<key>`; the JWT is ES256-signed by k, for this origin, expiring within 24 h. */
        private fun verifyVapid(authorization: String?): Pair<String, String> {
            val match = Regex("""^vapid t=([\w-]+)\.([\w-]+)\.([\w-]+), k=([\w-]+)$""").find(authorization.orEmpty())
                ?: error("Authorization is not a VAPID header")
            val (head, claims, signature, k) = match.destructured
            val verifier = Signature.getInstance("SHA256withECDSAinP1363Format")
            verifier.initVerify(pointToKey(unbase64url(k), publicKey))
            verifier.update("$head.$claims".toByteArray())
            check(verifier.verify(unbase64url(signature))) { "the VAPID signature does not verify" }
            val jwt = PhebyJson.parseToJsonElement(unbase64url(claims).toString(Charsets.UTF_8)).jsonObject
            check(jwt.getValue("aud").jsonPrimitive.content == origin) { "VAPID aud is not $origin" }
            val expiresIn = jwt.getValue("exp").jsonPrimitive.long - System.currentTimeMillis() / 1000
            check(expiresIn in 1..24 * 3600) { "VAPID exp is $expiresIn s away" }
            return k to jwt.getValue("sub").jsonPrimitive.content
        }
    }

    private companion object {
        fun base64url(bytes: ByteArray): String = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes)

        fun unbase64url(text: String): ByteArray = Base64.getUrlDecoder().decode(text)

        /** 0x04 ‖ X ‖ Y, each coordinate 32 bytes. */
        fun uncompressed(key: ECPublicKey): ByteArray =
            byteArrayOf(4) + coordinate(key.w.affineX) + coordinate(key.w.affineY)

        fun coordinate(value: BigInteger): ByteArray = value.toByteArray().takeLast(32).toByteArray().let { ByteArray(32 - it.size) + it }

        /** An uncompressed P-256 point as a public key on [curveOf]'s curve. */
        fun pointToKey(point: ByteArray, curveOf: ECPublicKey): PublicKey {
            check(point.size == 65 && point[0] == 4.toByte()) { "not an uncompressed P-256 point" }
            val w = ECPoint(BigInteger(1, point.copyOfRange(1, 33)), BigInteger(1, point.copyOfRange(33, 65)))
            return KeyFactory.getInstance("EC").generatePublic(ECPublicKeySpec(w, curveOf.params))
        }

        /** HKDF-SHA256 (RFC 5869) for at most one block of output. */
        fun hkdf(salt: ByteArray, ikm: ByteArray, info: ByteArray, length: Int): ByteArray {
            val prk = Mac.getInstance("HmacSHA256").run {
                init(SecretKeySpec(salt, "HmacSHA256"))
                doFinal(ikm)
            }
            return Mac.getInstance("HmacSHA256").run {
                init(SecretKeySpec(prk, "HmacSHA256"))
                doFinal(info + byteArrayOf(1))
            }.copyOf(length)
        }
    }
}
