package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.net.InetAddress
import java.net.ServerSocket

/** A free port on 127.0.0.1, so the server's public URL (`PHEBY_PUBLIC_URL`) can name it before it starts. */
private fun freePort(): Int = ServerSocket(0, 0, InetAddress.getByName("127.0.0.1")).use { it.localPort }

/**
 * The `devices` extension against the real server: the owner opens a pairing code, a phone pairs with
 * the `pheby://pair` URI it would scan, connects with its own secret, and is revoked for good.
 */
class DevicesTest : ServerTest(freePort().let { mapOf("PHEBY_PORT" to "$it", "PHEBY_PUBLIC_URL" to "ws://127.0.0.1:$it/ws") }) {
    /** The owner: the master secret, asking for `devices`. */
    private val owner = runBlocking { server.client { copy(features = features + Features.DEVICES) } }

    @AfterAll
    fun closeOwner() = owner.close()

    private fun phone(paired: PairedDevice, features: Set<String> = setOf(Features.DELTA_APPEND, Features.PUSH)) =
        PhebyClient(PhebyClientOptions(url = paired.url, secret = paired.deviceSecret, features = features))

    @Test
    fun `a phone pairs from the owner's QR code, then works with its own secret like any client`() = blocking {
        val created = owner.createPairing("Kotlin phone")
        val scanned = PairingUri.parse(created.uri)
        assertEquals(PairingUri(server.url, created.code), scanned)

        val paired = PhebyClient.pairDevice(created.uri, deviceName = "Pixel 9")
        assertEquals(server.url, paired.url)
        assertTrue(Regex("[A-Za-z0-9_-]{43,256}").matches(paired.deviceSecret))
        assertFalse(paired.deviceSecret in paired.toString())
        val listed = owner.listDevices().devices.single { it.deviceId == paired.deviceId }
        assertEquals("Kotlin phone", listed.name, "the owner's name for the code wins over the phone's")
        assertNull(listed.lastSeenAt, "the pairing connection is not a use of the secret")

        phone(paired).use { phone ->
            phone.connect()
            val id = phone.createConversation("From the phone").conversationId
            assertTrue(checkRun(phone.chat(id, "hello from a paired phone").toList()).contains("hello from a paired phone"))
            assertEquals(2L, phone.upload(id, "note.txt", "hi".byteInputStream(), 2, "text/plain").size, "the device secret works over HTTP too")
        }
        assertNotNull(owner.listDevices().devices.single { it.deviceId == paired.deviceId }.lastSeenAt)

        // The code was spent.
        expectPheby("unauthorized") { PhebyClient.pairDevice(created.uri, deviceName = "Second try") }
    }

    @Test
    fun `only the owner manages devices`() = blocking {
        val paired = PhebyClient.pairDevice(owner.createPairing().uri)
        phone(paired, setOf(Features.DEVICES)).use { phone ->
            phone.connect()
            assertEquals(setOf(Features.DEVICES), phone.features)
            expectPheby("bad_request") { phone.createPairing() }
            expectPheby("bad_request") { phone.listDevices() }
            expectPheby("bad_request") { phone.revokeDevice(paired.deviceId) }
        }
        owner.revokeDevice(paired.deviceId)
    }

    @Test
    fun `a revoked device's connection ends for good - 4401 device revoked, and its secret is refused from then on`() = blocking {
        val paired = PhebyClient.pairDevice(owner.createPairing().uri, deviceName = "To revoke")
        phone(paired).use { phone ->
            phone.connect()
            assertEquals(paired.deviceId, owner.revokeDevice(paired.deviceId).deviceId)

            val failed = phone.state.first { it is ConnectionState.Failed } as ConnectionState.Failed
            assertEquals("unauthorized", failed.error.code)
            assertEquals("device revoked", failed.error.message)
            assertEquals(CloseCodes.UNAUTHORIZED, failed.error.closeCode)
            assertTrue(failed.error.isFinal, "no retry loop")

            expectPheby("unauthorized") { phone.connect() }
            assertEquals(401, expectPheby("unauthorized") { phone.answerApproval("any", ApprovalChoice.ONCE) }.status)
        }
        assertTrue(owner.listDevices().devices.none { it.deviceId == paired.deviceId })
        expectPheby("not_found") { owner.revokeDevice(paired.deviceId) }
    }
}
