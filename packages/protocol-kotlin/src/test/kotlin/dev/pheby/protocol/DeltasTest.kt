package dev.pheby.protocol

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test
import java.io.File

/** The `delta.append` extension: append deltas from the shared fixtures stitch to the cumulative text. */
class DeltasTest {
    private val fixtures = File(System.getProperty("pheby.fixtures") ?: "../protocol/fixtures")

    private fun delta(name: String) =
        decodeServerMessage(File(fixtures, "valid/server/$name").readText()) as MessageDelta

    @Test
    fun `append deltas stitch to the cumulative fixture's text`() {
        val cumulative = delta("message.delta.json")
        assertNull(cumulative.offset)
        val first = delta("message.delta.append-start.json")
        val second = delta("message.delta.append.json")
        assertEquals(0L, first.offset)
        assertEquals(cumulative.text, second.applyTo(first.applyTo("stale draft of another connection")))
        assertEquals(cumulative.text, cumulative.applyTo("anything"))
    }

    @Test
    fun `offsets count UTF-16 code units, like Kotlin strings`() {
        val base = delta("message.delta.append.json")
        val draft = base.copy(offset = 0, text = "a\uD83D\uDE00").applyTo("")
        assertEquals("a\uD83D\uDE00b", base.copy(offset = 3, text = "b").applyTo(draft))
        assertEquals("a\uD83D\uDE01", base.copy(offset = 1, text = "\uD83D\uDE01").applyTo(draft))
    }

    @Test
    fun `an offset beyond the draft means a missed delta`() {
        val base = delta("message.delta.append.json")
        assertEquals("Hey", base.copy(offset = 2, text = "y").applyTo("He"))
        assertThrows(IllegalArgumentException::class.java) { base.copy(offset = 3, text = "y").applyTo("He") }
        assertThrows(IllegalArgumentException::class.java) { base.copy(offset = -1, text = "y").applyTo("He") }
    }

    @Test
    fun `the feature name matches the TypeScript constant`() {
        val hello = decodeClientMessage(File(fixtures, "valid/client/hello.features.json").readText()) as Hello
        assertEquals(FEATURE_DELTA_APPEND, hello.features!!.first())
    }
}
