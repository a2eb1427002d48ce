package dev.pheby.client

import dev.pheby.protocol.FEATURE_DELTA_APPEND
import dev.pheby.protocol.PhebyJson
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.serializer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import java.io.File
import java.util.concurrent.TimeUnit

/**
 * What the client hard-codes equals what `@pheby/protocol` (the source of truth) exports, read from its
 * build by node: a protocol change that the Kotlin client does not follow breaks the build.
 */
class ProtocolConstantsTest {
    private val protocol: JsonObject by lazy {
        val dist = File(repoRoot, "packages/protocol/dist/index.js")
        check(dist.isFile) { "$dist is missing: build @pheby/protocol first (pnpm build)" }
        val url = JsonPrimitive(dist.toURI().toString()).toString()
        val script = """
            import * as p from $url;
            import { readFileSync } from "node:fs";
            const { version } = JSON.parse(readFileSync(new URL("../package.json", $url), "utf8"));
            console.log(JSON.stringify({ replies: p.REPLY_TYPES, alternatives: p.ALTERNATIVE_REPLY_TYPES, close: p.CLOSE_CODES, append: p.FEATURE_DELTA_APPEND, features: p.FEATURES, version }));
        """.trimIndent()
        val node = ProcessBuilder(System.getProperty("pheby.node") ?: "node", "--input-type=module", "-e", script)
            .redirectErrorStream(true).start()
        val out = node.inputStream.bufferedReader().readText()
        check(node.waitFor(60, TimeUnit.SECONDS) && node.exitValue() == 0) { "node failed: $out" }
        PhebyJson.parseToJsonElement(out).jsonObject
    }

    @Test
    fun `the reply of every request is REPLY_TYPES' reply`() {
        val kotlin = REPLY_TYPES.entries.associate { (request, reply) ->
            serializer(request.java).descriptor.serialName to serializer(reply.java).descriptor.serialName
        }
        val typescript = protocol.getValue("replies").jsonObject.mapValues { it.value.jsonPrimitive.content }
        assertEquals(typescript, kotlin)
    }

    @Test
    fun `the other replies of requests using an extension field are ALTERNATIVE_REPLY_TYPES`() {
        val kotlin = ALTERNATIVE_REPLY_TYPES.entries.associate { (request, reply) ->
            serializer(request.java).descriptor.serialName to serializer(reply.java).descriptor.serialName
        }
        val typescript = protocol.getValue("alternatives").jsonObject.mapValues { it.value.jsonPrimitive.content }
        assertEquals(typescript, kotlin)
    }

    @Test
    fun `the close codes are CLOSE_CODES`() {
        val close = protocol.getValue("close").jsonObject.mapValues { it.value.jsonPrimitive.int }
        assertEquals(
            mapOf(
                "normal" to CloseCodes.NORMAL,
                "goingAway" to CloseCodes.GOING_AWAY,
                "messageTooBig" to CloseCodes.MESSAGE_TOO_BIG,
                "unauthorized" to CloseCodes.UNAUTHORIZED,
                "lockedOut" to CloseCodes.LOCKED_OUT,
                "authTimeout" to CloseCodes.AUTH_TIMEOUT,
                "versionMismatch" to CloseCodes.VERSION_MISMATCH,
                "slowConsumer" to CloseCodes.SLOW_CONSUMER,
            ),
            close,
        )
        assertEquals(FEATURE_DELTA_APPEND, protocol.getValue("append").jsonPrimitive.content)
    }

    @Test
    fun `the feature names are FEATURES`() {
        assertEquals(protocol.getValue("features").jsonArray.map { it.jsonPrimitive.content }, Features.ALL)
    }

    @Test
    fun `the Maven version is @pheby-protocol's version`() {
        assertEquals(protocol.getValue("version").jsonPrimitive.content, System.getProperty("pheby.version"))
    }
}
