package dev.pheby.client

import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.io.File
import java.util.concurrent.TimeUnit
import java.util.zip.ZipFile

/**
 * `java -jar target/example.jar <ws-url> <secret> <text>` against the real server, as the docs tell
 * an Android developer to try it (run by Failsafe after `package` built the jar).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ExampleIT {
    private val jar = File(System.getProperty("pheby.exampleJar") ?: "target/example.jar")
    private val server = PhebyServer().start()

    @AfterAll
    fun stop() = server.close()

    private class Run(val exit: Int, val out: String, val err: String)

    private fun example(vararg args: String): Run {
        val java = File(System.getProperty("java.home"), "bin/java").path
        val process = ProcessBuilder(java, "-jar", jar.path, *args).start()
        val err = StringBuilder()
        val errReader = Thread { err.append(process.errorStream.bufferedReader().readText()) }.apply { start() }
        val out = process.inputStream.bufferedReader().readText()
        check(process.waitFor(120, TimeUnit.SECONDS)) { "the example did not exit" }
        errReader.join()
        return Run(process.exitValue(), out, err.toString())
    }

    @Test
    fun `it chats - the answer streams and the final text is printed, exit 0`() {
        val run = example(server.url, server.secret, "Hello from the example")
        assertEquals(0, run.exit, run.err)
        val final = "You said: \"Hello from the example\". This is the Pheby simulator"
        // Streamed as it grows, then the final text on its own.
        assertEquals(2, Regex(Regex.escape(final)).findAll(run.out).count(), run.out)
    }

    @Test
    fun `it answers an approval with once`() {
        val run = example(server.url, server.secret, "/sim approval")
        assertEquals(0, run.exit, run.err)
        assertTrue(run.out.trimEnd().endsWith("Approved (once): I ran `rm -rf /tmp/pheby-sim-build`."), run.out)
    }

    @Test
    fun `a failure exits non-zero with the error code - a wrong secret, a failed run`() {
        val wrong = example(server.url, "not-the-secret-0123456789", "hi")
        assertEquals(1, wrong.exit)
        assertEquals("error unauthorized: Invalid secret", wrong.err.trim())
        val failed = example(server.url, server.secret, "/sim fail")
        assertEquals(1, failed.exit)
        assertEquals("run failed: Simulated failure (/sim fail)", failed.err.trim())
    }

    @Test
    fun `the jar carries the models' consumer R8 and ProGuard rules`() {
        ZipFile(jar).use { zip ->
            for (path in listOf("META-INF/proguard/pheby-protocol-kotlin.pro", "META-INF/com.android.tools/r8/pheby-protocol-kotlin.pro")) {
                val entry = zip.getEntry(path) ?: error("$path is missing from the shaded models")
                assertTrue(zip.getInputStream(entry).reader().readText().contains("dev.pheby.protocol"), path)
            }
        }
    }
}
