package dev.pheby.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import java.io.File

/** docs/kotlin.md shows the example that is compiled (under -Werror), shipped and run in CI, verbatim. */
class DocsTest {
    @Test
    fun `the docs show the compiled example`() {
        val docs = File(repoRoot, "docs/kotlin.md").readText()
        val section = docs.substringAfter("\n## The example", "")
        val block = section.substringAfter("\n```kotlin\n", "").substringBefore("\n```\n", "")
        val source = File(repoRoot, "packages/client-kotlin/src/main/kotlin/dev/pheby/client/example/Example.kt").readText()
        assertEquals(source.trimEnd(), block, "copy packages/client-kotlin/src/main/kotlin/dev/pheby/client/example/Example.kt into docs/kotlin.md")
    }
}
