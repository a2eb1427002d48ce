package dev.pheby.example

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import java.io.File

/** The OkHttp sketch in docs/kotlin.md is this module's PhebyConnection.kt, compiled under -Werror, verbatim. */
class DocsSketchTest {
    @Test
    fun `the docs show the compiled sketch`() {
        val docs = File(System.getProperty("pheby.docs") ?: "../../docs/kotlin.md").readText()
        val section = docs.substringAfter("\n## An OkHttp client loop", "")
        val block = section.substringAfter("\n```kotlin\n", "").substringBefore("\n```\n", "")
        val source = File(System.getProperty("basedir") ?: ".", "src/test/kotlin/dev/pheby/example/PhebyConnection.kt").readText()
        assertEquals(source.trimEnd(), block, "copy src/test/kotlin/dev/pheby/example/PhebyConnection.kt into docs/kotlin.md")
    }
}
