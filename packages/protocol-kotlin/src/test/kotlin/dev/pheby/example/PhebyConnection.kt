package dev.pheby.example

import dev.pheby.protocol.ApprovalRequest
import dev.pheby.protocol.ClarifyRequest
import dev.pheby.protocol.ClientMessage
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.ErrorCode
import dev.pheby.protocol.FEATURE_DELTA_APPEND
import dev.pheby.protocol.Hello
import dev.pheby.protocol.MessageComplete
import dev.pheby.protocol.MessageDelta
import dev.pheby.protocol.MessageStart
import dev.pheby.protocol.ModelsCurrent
import dev.pheby.protocol.ProtocolError
import dev.pheby.protocol.Ready
import dev.pheby.protocol.ReasoningCurrent
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.applyTo
import dev.pheby.protocol.decodeServerMessage
import dev.pheby.protocol.toJson
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlin.random.Random

/** Your state holder: what the connection hands over. */
interface PhebyUi {
    fun replaceConversation(history: ConversationHistory) // history, attachments, run, tools, pending
    fun startMessage(message: MessageStart)
    fun appendDelta(message: MessageDelta) // always cumulative: text is the whole draft so far
    fun completeMessage(message: MessageComplete)
    fun updateTool(event: ToolEvent)
    fun askApproval(request: ApprovalRequest)
    fun askClarification(request: ClarifyRequest)
    fun finishRun(finished: RunFinished)
    fun showError(error: ProtocolError)
    fun onEvent(message: ServerMessage) // snapshots, *.changed, *.resolved, pong, newer types, …
}

class PhebyConnection(
    private val http: OkHttpClient, // build with .pingInterval(25, TimeUnit.SECONDS)
    private val url: String, // wss://host/ws
    private val secret: String,
    private val visibleConversations: () -> Collection<String>,
    private val ui: PhebyUi,
) {
    private val scheduler = Executors.newSingleThreadScheduledExecutor()
    @Volatile private var attempt = 0
    @Volatile private var socket: WebSocket? = null
    @Volatile private var stopped = false
    // Drafts stitched from append deltas, by message_id; only touched on OkHttp's reader thread.
    private val drafts = HashMap<String, String>()

    fun start() = connect()

    fun send(message: ClientMessage): Boolean = socket?.send(message.toJson()) ?: false

    fun stop() {
        stopped = true
        socket?.close(1000, null)
        scheduler.shutdown()
    }

    private fun connect() {
        socket = http.newWebSocket(Request.Builder().url(url).build(), object : WebSocketListener() {
            override fun onOpen(webSocket: WebSocket, response: Response) {
                // Within 10 s. Asking for append deltas keeps a long answer's bytes near its length;
                // a server without the feature ignores the ask and sends cumulative deltas.
                webSocket.send(Hello(secret = secret, protocolVersion = 1, features = listOf(FEATURE_DELTA_APPEND)).toJson())
            }

            override fun onMessage(webSocket: WebSocket, text: String) {
                val message = try {
                    decodeServerMessage(text)
                } catch (e: IllegalArgumentException) {
                    return // malformed, or a known type missing a required field: skip the frame
                }
                when (message) {
                    is Ready -> {
                        attempt = 0
                        drafts.clear() // the server starts every draft over (offset 0) on a new connection
                        // Reconnect recovery: re-open what the user sees; the snapshot replaces local state.
                        visibleConversations().forEach { webSocket.send(ConversationOpen(conversationId = it).toJson()) }
                        webSocket.send(ModelsCurrent().toJson())
                        webSocket.send(ReasoningCurrent().toJson())
                    }
                    is ConversationHistory -> {
                        message.run?.let { drafts[it.messageId] = it.text } // the whole draft so far
                        ui.replaceConversation(message)
                    }
                    is MessageStart -> ui.startMessage(message)
                    is MessageDelta -> {
                        val draft = try {
                            message.applyTo(drafts[message.messageId] ?: "")
                        } catch (e: IllegalArgumentException) {
                            // A missed delta: the snapshot's run.text will carry the whole draft.
                            webSocket.send(ConversationOpen(conversationId = message.conversationId).toJson())
                            return
                        }
                        drafts[message.messageId] = draft
                        ui.appendDelta(message.copy(offset = null, text = draft))
                    }
                    is MessageComplete -> {
                        drafts.remove(message.messageId)
                        ui.completeMessage(message)
                    }
                    is ToolEvent -> ui.updateTool(message)
                    is ApprovalRequest -> ui.askApproval(message)
                    is ClarifyRequest -> ui.askClarification(message)
                    is RunFinished -> ui.finishRun(message) // status may be RunStatus.Unknown
                    is ProtocolError -> if (message.error.code in FINAL_ERRORS) stopped = true else ui.showError(message)
                    else -> ui.onEvent(message) // includes ServerMessage.Unknown, a type from a newer server
                }
            }

            override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
                if (code in FINAL_CLOSE_CODES) stopped = true
                webSocket.close(1000, null) // complete the close handshake; onClosed follows
            }

            override fun onClosed(webSocket: WebSocket, code: Int, reason: String) = scheduleReconnect()

            override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) = scheduleReconnect()
        })
    }

    private fun scheduleReconnect() {
        if (stopped) return
        val ceiling = minOf(30_000L, 500L shl minOf(attempt++, 6))
        scheduler.schedule(::connect, Random.nextLong(ceiling + 1), TimeUnit.MILLISECONDS)
    }

    private companion object {
        val FINAL_CLOSE_CODES = setOf(4401, 4426, 4429)
        val FINAL_ERRORS = setOf(ErrorCode.UNAUTHORIZED, ErrorCode.VERSION_MISMATCH, ErrorCode.RATE_LIMITED)
    }
}
