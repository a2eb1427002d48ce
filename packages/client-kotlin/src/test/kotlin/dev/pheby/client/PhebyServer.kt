package dev.pheby.client

import dev.pheby.protocol.PhebyJson
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.io.File
import java.io.IOException
import java.nio.file.Files
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit
import kotlin.concurrent.thread

/** The repository root (the `pheby.root` system property Maven sets). */
val repoRoot: File = File(System.getProperty("pheby.root") ?: "../..").canonicalFile

/**
 * The built pheby-server (`apps/server/dist/main.js`, simulator backend) as a child process, configured
 * only through its environment, as an operator runs it: a fresh data directory, 127.0.0.1, a free
 * port. [restart] brings it back on the same port and data, as a server restart does.
 */
class PhebyServer(
    private val env: Map<String, String> = emptyMap(),
    val secret: String = "kotlin-client-test-secret-0123456789",
) : AutoCloseable {
    private val dataDir: File = Files.createTempDirectory("pheby-kotlin-").toFile()
    private val main = File(repoRoot, "apps/server/dist/main.js")
    private val lines = CopyOnWriteArrayList<String>()
    private var process: Process? = null
    private var overrides: Map<String, String> = emptyMap()

    /** The port it listens on; fixed after the first start. */
    var port: Int = 0
        private set

    /** The WebSocket URL. */
    val url: String get() = "ws://127.0.0.1:$port/ws"

    /** Starts it and returns once it logged that it listens. */
    fun start(): PhebyServer {
        check(main.isFile) { "$main is missing: build the server first (pnpm build)" }
        val builder = ProcessBuilder(System.getProperty("pheby.node") ?: "node", main.path).redirectErrorStream(true)
        builder.environment().keys.removeIf { it.startsWith("PHEBY_") }
        builder.environment() += mapOf(
            "PHEBY_SECRET" to secret,
            "PHEBY_BIND_HOST" to "127.0.0.1",
            "PHEBY_PORT" to port.toString(),
            "PHEBY_DATA_DIR" to dataDir.path,
            "PHEBY_AGENT" to "simulator",
        ) + env + overrides
        val started = builder.start()
        process = started
        val from = lines.size
        thread(isDaemon = true, name = "pheby-server-log") {
            try {
                started.inputStream.bufferedReader().forEachLine { lines += it }
            } catch (e: IOException) {
                // the process was stopped
            }
        }
        val listening = awaitLog("pheby-server listening", from = from, timeoutMs = 60_000) {
            check(started.isAlive) { "pheby-server exited (${started.exitValue()}): ${lines.drop(from).joinToString("\n")}" }
        }
        val url = (PhebyJson.parseToJsonElement(listening) as JsonObject)["url"] as JsonPrimitive
        port = Regex(""":(\d+)/ws$""").find(url.content)!!.groupValues[1].toInt()
        return this
    }

    /** Stops it like systemd does (SIGTERM), and waits for it to exit. */
    fun stop() {
        val running = process ?: return
        process = null
        running.destroy()
        if (!running.waitFor(30, TimeUnit.SECONDS)) running.destroyForcibly().waitFor()
    }

    /** Stop, then start again on the same port with the same data, and [env] on top of the settings. */
    fun restart(env: Map<String, String> = emptyMap()): PhebyServer {
        stop()
        overrides = env
        return start()
    }

    /** How many log lines so far have this `msg`. */
    fun count(msg: String): Int = lines.count { it.contains("\"msg\":\"$msg\"") }

    /** The first log line from index [from] on with this `msg`, polling (never a fixed wait) until [timeoutMs]. */
    fun awaitLog(msg: String, from: Int = 0, timeoutMs: Long = 30_000, whileWaiting: () -> Unit = {}): String {
        val deadline = System.nanoTime() + timeoutMs * 1_000_000
        while (true) {
            lines.drop(from).firstOrNull { it.contains("\"msg\":\"$msg\"") }?.let { return it }
            whileWaiting()
            check(System.nanoTime() < deadline) { "pheby-server did not log \"$msg\" within $timeoutMs ms" }
            Thread.sleep(20)
        }
    }

    /** How many distinct connections (`conn` of the log line) logged this `msg`. */
    fun connections(msg: String): Int = lines.filter { it.contains("\"msg\":\"$msg\"") }
        .map { (PhebyJson.parseToJsonElement(it) as JsonObject)["conn"].toString() }.toSet().size

    /** Everything it logged (JSON lines). */
    val log: List<String> get() = lines.toList()

    override fun close() {
        stop()
        dataDir.deleteRecursively()
    }
}
