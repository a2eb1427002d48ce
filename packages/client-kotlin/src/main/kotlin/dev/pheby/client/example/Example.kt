package dev.pheby.client.example

import dev.pheby.client.PhebyClient
import dev.pheby.client.PhebyClientOptions
import dev.pheby.client.PhebyException
import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunStatus
import kotlinx.coroutines.runBlocking
import kotlin.system.exitProcess

/** `java -jar example.jar <ws-url> <secret> <text>`: one chat turn, approvals answered `once`. */
fun main(args: Array<String>) {
    val (url, secret, text) = args
    val status = runBlocking {
        PhebyClient(PhebyClientOptions(url = url, secret = secret)).use { client ->
            try {
                client.connect()
                val conversation = client.createConversation("Kotlin example").conversationId
                var shown = ""
                var finished: RunFinished? = null
                client.chat(conversation, text).collect { event ->
                    when (event) {
                        is MessageDelta -> print(event.text.removePrefix(shown)).also { shown = event.text }
                        is ApprovalRequest -> client.respondToApproval(event.approvalId, ApprovalChoice.ONCE)
                        is MessageComplete -> if (event.kind == null) println("${event.text.removePrefix(shown)}\n\n${event.text}")
                        is RunFinished -> finished = event
                        else -> Unit
                    }
                }
                if (finished?.status == RunStatus.COMPLETED) 0 else 1.also { System.err.println("run ${finished?.status}: ${finished?.error}") }
            } catch (e: PhebyException) {
                System.err.println("error ${e.code}: ${e.message}")
                1
            }
        }
    }
    exitProcess(status)
}
