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
    fun `thought deltas stitch to the complete thought, with the message deltas' rules`() {
        val start = decodeServerMessage(File(fixtures, "valid/server/thought.delta.json").readText()) as ThoughtDelta
        val next = decodeServerMessage(File(fixtures, "valid/server/thought.delta.append-resume.json").readText()) as ThoughtDelta
        val complete = decodeServerMessage(File(fixtures, "valid/server/thought.complete.json").readText()) as ThoughtComplete
        assertEquals(0L, start.offset)
        // Offset 35 counts the surrogate pair of the emoji as two UTF-16 code units, as Kotlin does.
        assertEquals(complete.text, next.applyTo(start.applyTo("stale thought of another connection")))
        assertThrows(IllegalArgumentException::class.java) { next.applyTo("The user asks") }
        assertThrows(IllegalArgumentException::class.java) { next.copy(offset = -1).applyTo(complete.text) }
    }

    @Test
    fun `the feature name matches the TypeScript constant`() {
        val hello = decodeClientMessage(File(fixtures, "valid/client/hello.features.json").readText()) as Hello
        assertEquals(FEATURE_DELTA_APPEND, hello.features!!.first())
    }
}
