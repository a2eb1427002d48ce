package dev.pheby.client

import dev.pheby.protocol.ApprovalChoice
import dev.pheby.protocol.ApprovalResolved
import dev.pheby.protocol.ApprovalRespond
import dev.pheby.protocol.AttachmentDescriptor
import dev.pheby.protocol.ChatSend
import dev.pheby.protocol.ClarifyResolved
import dev.pheby.protocol.ClarifyRespond
import dev.pheby.protocol.ClientMessage
import dev.pheby.protocol.ConversationCreate
import dev.pheby.protocol.ConversationCreated
import dev.pheby.protocol.ConversationDelete
import dev.pheby.protocol.ConversationDeleted
import dev.pheby.protocol.ConversationHistory
import dev.pheby.protocol.ConversationList
import dev.pheby.protocol.ConversationOpen
import dev.pheby.protocol.ConversationRename
import dev.pheby.protocol.ConversationRenamed
import dev.pheby.protocol.ConversationSnapshot
import dev.pheby.protocol.Hello
import dev.pheby.protocol.ModelChanged
import dev.pheby.protocol.ModelCurrent
import dev.pheby.protocol.ModelSet
import dev.pheby.protocol.ModelsCurrent
import dev.pheby.protocol.ModelsList
import dev.pheby.protocol.ModelsSnapshot
import dev.pheby.protocol.PhebyJson
import dev.pheby.protocol.Ping
import dev.pheby.protocol.Pong
import dev.pheby.protocol.ProtocolError
import dev.pheby.protocol.Ready
import dev.pheby.protocol.ReasoningChanged
import dev.pheby.protocol.ReasoningCurrent
import dev.pheby.protocol.ReasoningEffort
import dev.pheby.protocol.ReasoningSet
import dev.pheby.protocol.ReasoningSnapshot
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunCancel
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.YoloChanged
import dev.pheby.protocol.YoloCurrent
import dev.pheby.protocol.YoloSet
import dev.pheby.protocol.YoloSnapshot
import dev.pheby.protocol.toJson
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineName
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.cancelChildren
import kotlinx.coroutines.channels.BufferOverflow
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableSharedFlow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.SharedFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asSharedFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.channelFlow
import kotlinx.coroutines.flow.onSubscription
import kotlinx.coroutines.launch
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import okio.ByteString
import java.io.File
import java.io.InputStream
import java.io.OutputStream
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.atomic.AtomicReference
import kotlin.reflect.KClass
import kotlin.time.Duration

/**
 * A Pheby Protocol v1 client: one WebSocket to a Pheby server, typed requests, every server frame as
 * a [Flow], automatic reconnect, and the attachment routes. Kotlin/JVM; works on Android (OkHttp,
 * kotlinx.coroutines, no Android APIs).
 *
 * ```kotlin
 * val client = PhebyClient(PhebyClientOptions(url = "wss://pheby.example.com/ws", secret = secret))
 * client.connect()
 * val conversation = client.createConversation("Hello").conversationId
 * client.chat(conversation, "What's the weather?").collect { event ->
 *     if (event is MessageDelta) bubble.text = event.text // always the whole draft so far
 * }
 * ```
 *
 * **Requests** suspend until the reply with the same `request_id` and return it, or throw a
 * [PhebyException] with the server's error code (or [PhebyException.TIMEOUT] /
 * [PhebyException.CONNECTION_CLOSED]).
 *
 * **Events**: [events] carries every frame the server sends, replies included, in order: a type from a
 * newer server as [ServerMessage.Unknown], never an exception. `message.delta` always carries the whole
 * draft so far (append deltas are stitched).
 *
 * **Reconnect**: after [connect] succeeded once, a dropped connection is reopened with jittered backoff
 * (never after a wrong secret or protocol version; after a lockout once it has expired), the
 * conversations passed to [follow] are re-opened, and their snapshots arrive in [events] and [resyncs].
 * [state] says where the connection stands.
 *
 * Thread-safe. [close] it when done.
 */
class PhebyClient internal constructor(
    /** The settings this client was made with. */
    val options: PhebyClientOptions,
    extraExtensions: List<ClientExtension>,
) : AutoCloseable {
    /** A client with [options]; nothing happens until [connect]. */
    constructor(options: PhebyClientOptions) : this(options, emptyList())

    private val ownsHttp = options.httpClient == null
    private val http: OkHttpClient = (options.httpClient ?: OkHttpClient()).newBuilder()
        .pingInterval(options.pingInterval.inWholeMilliseconds, TimeUnit.MILLISECONDS)
        .build()
    internal val routes = HttpRoutes(http, options.url, options.secret)
    private val attachments = Attachments(routes)
    internal val extensions: List<ClientExtension> =
        options.features.mapNotNull { BUILT_IN_EXTENSIONS[it]?.invoke() } + extraExtensions
    private val helloFeatures: List<String> = (options.features + extraExtensions.map { it.feature }).toList()
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default + CoroutineName("pheby-client"))

    private val stateFlow = MutableStateFlow<ConnectionState>(ConnectionState.Idle)

    // Unbounded, so the reader thread never blocks on a slow collector and no frame is dropped.
    private val eventFlow = MutableSharedFlow<ServerMessage>(extraBufferCapacity = Int.MAX_VALUE)
    private val invalidFlow = MutableSharedFlow<InvalidFrame>(extraBufferCapacity = 64, onBufferOverflow = BufferOverflow.DROP_OLDEST)
    private val resyncFlow = MutableSharedFlow<Map<String, ConversationHistory>>(extraBufferCapacity = 16, onBufferOverflow = BufferOverflow.DROP_OLDEST)

    private val pending = ConcurrentHashMap<String, Pending>()
    private val followed = ConcurrentHashMap<String, Follow>()
    private val nextId = AtomicLong(1)

    // Guarded by lock: the current connection, and what happens when it ends.
    private val lock = Any()
    private var link: Link? = null
    private var reconnectJob: Job? = null
    private var closed = false

    /** Where the connection stands; see [ConnectionState]. */
    val state: StateFlow<ConnectionState> = stateFlow.asStateFlow()

    /**
     * Every frame the server sends, in order: events and replies alike (a reply also resumes its
     * request). Hot: a collector sees what arrives while it collects, so start collecting before the
     * request whose events you want (or use [chat]).
     */
    val events: SharedFlow<ServerMessage> = eventFlow.asSharedFlow()

    /** Frames the server sent that the models cannot decode (malformed JSON, a known type missing a field); they are skipped. */
    val invalidFrames: SharedFlow<InvalidFrame> = invalidFlow.asSharedFlow()

    /** After each reconnect, the fresh snapshots of the [follow]ed conversations, by conversation ID. */
    val resyncs: SharedFlow<Map<String, ConversationHistory>> = resyncFlow.asSharedFlow()

    /** The extensions the server enabled on the current connection (`ready.features`); empty when not connected. */
    val features: Set<String> get() = (stateFlow.value as? ConnectionState.Open)?.features ?: emptySet()

    /**
     * Opens the WebSocket and completes the handshake (`hello` with [PhebyClientOptions.features]).
     * Returns the server's `ready`. Throws [PhebyException]: `unauthorized` or `version_mismatch` (final:
     * [state] becomes [ConnectionState.Failed]), `rate_limited` (locked out; see
     * [PhebyException.retryAfter]), `auth_timeout`, [PhebyException.TIMEOUT] or
     * [PhebyException.CONNECTION_CLOSED] (with [PhebyException.status] if the upgrade was refused).
     * This first attempt is not retried; once it succeeded, drops are repaired automatically.
     */
    suspend fun connect(): Ready = connect(::secretHello)

    /** [connect] with another `hello` (a pairing one: [pairDevice]); reconnects say the secret's. */
    internal suspend fun connect(hello: (requestId: String) -> Hello): Ready {
        val previous = synchronized(lock) {
            check(!closed) { "this PhebyClient is closed; create a new one" }
            reconnectJob?.cancel()
            reconnectJob = null
            link.also { link = null }
        }
        previous?.cancel()
        stateFlow.value = ConnectionState.Connecting
        return try {
            handshake(hello)
        } catch (e: PhebyException) {
            if (!synchronized(lock) { closed }) {
                stateFlow.value = if (e.isFinal) ConnectionState.Failed(e) else ConnectionState.Closed(e)
            }
            throw e
        }
    }

    /**
     * Drops the current connection and reconnects at once (e.g. when the device switched networks, so
     * the old path is dead but no ping has failed yet). Requests in flight fail with
     * [PhebyException.CONNECTION_CLOSED]. Does nothing unless connected or reconnecting.
     */
    fun reconnect() {
        val dropped = synchronized(lock) {
            val current = stateFlow.value
            if (closed || (current !is ConnectionState.Open && current !is ConnectionState.Reconnecting)) return
            startReconnect(PhebyException(PhebyException.CONNECTION_CLOSED, "reconnect() was called"), immediately = true)
            link.also { link = null }
        }
        dropped?.cancel()
    }

    /**
     * Closes the connection for good: no reconnect, requests in flight fail with
     * [PhebyException.CONNECTION_CLOSED], and an OkHttp client the client made itself is shut down.
     */
    override fun close() {
        val last = synchronized(lock) {
            if (closed) return
            closed = true
            reconnectJob?.cancel()
            reconnectJob = null
            link.also { link = null }
        }
        last?.let {
            it.close()
            failPending(it, PhebyException(PhebyException.CONNECTION_CLOSED, "the client was closed"))
        }
        stateFlow.value = ConnectionState.Closed(null)
        scope.cancel()
        if (ownsHttp) {
            http.dispatcher.executorService.shutdown()
            http.connectionPool.evictAll()
        }
    }

    /**
     * Sends [message] and returns its direct reply of type [reply]. A `request_id` is set when
     * [message] has none. Throws [PhebyException] with the server's error code when the reply is an
     * `error`, [PhebyException.TIMEOUT] after [timeout], [PhebyException.CONNECTION_CLOSED] when not
     * connected or when the connection drops first. For a known message [reply] must be its reply type
     * (`ChatSend` → `RunAccepted`, …); a [ClientMessage.Unknown] (an extension's request) may name any.
     */
    suspend fun <R : ServerMessage> request(message: ClientMessage, reply: KClass<R>, timeout: Duration = options.requestTimeout): R {
        REPLY_TYPES[message::class]?.let { expected ->
            require(expected == reply) { "the reply to ${message::class.simpleName} is ${expected.simpleName}, not ${reply.simpleName}" }
        }
        val current = synchronized(lock) { link?.takeIf { it.ready } }
            ?: throw PhebyException(PhebyException.CONNECTION_CLOSED, "not connected")
        return exchange(current, message, reply, timeout)
    }

    /** [request] with the reply type as a type argument: `client.request<RunAccepted>(ChatSend(…))`. */
    suspend inline fun <reified R : ServerMessage> request(message: ClientMessage, timeout: Duration = options.requestTimeout): R =
        request(message, R::class, timeout)

    /** `ping` → `pong`. */
    suspend fun ping(): Pong = request(Ping())

    /** `conversation.list`: every conversation. */
    suspend fun listConversations(): ConversationSnapshot = request(ConversationList())

    /** `conversation.create`; every client also gets `conversation.updated`. */
    suspend fun createConversation(name: String? = null): ConversationCreated = request(ConversationCreate(name = name))

    /**
     * `conversation.open`: the newest [limit] messages (default 200, at most 500) before
     * [beforeMessageId] (exclusive; page back with the first `message_id` of the previous page while
     * `hasMore`), plus the recoverable state: attachments, the active run, tools, pending decisions.
     */
    suspend fun openConversation(conversationId: String, limit: Int? = null, beforeMessageId: String? = null): ConversationHistory =
        request(ConversationOpen(conversationId = conversationId, limit = limit?.toLong(), beforeMessageId = beforeMessageId))

    /** `conversation.rename` (broadcast to every client). */
    suspend fun renameConversation(conversationId: String, name: String): ConversationRenamed =
        request(ConversationRename(conversationId = conversationId, name = name))

    /** `conversation.delete` (broadcast to every client). Also stops [follow]ing it. */
    suspend fun deleteConversation(conversationId: String): ConversationDeleted =
        request<ConversationDeleted>(ConversationDelete(conversationId = conversationId)).also { unfollow(conversationId) }

    /**
     * `chat.send`: starts a run and returns its `run.accepted`. The run's frames arrive in [events];
     * [chat] hands them over as one flow. Up to 10 [attachmentIds] of uploads to this conversation.
     */
    suspend fun sendMessage(conversationId: String, text: String, attachmentIds: List<String> = emptyList()): RunAccepted =
        request(ChatSend(conversationId = conversationId, text = text, attachmentIds = attachmentIds.ifEmpty { null }))

    /** `run.cancel`: returns the run's single `run.finished` (`cancelled`). A run no longer active: `not_found`. */
    suspend fun cancelRun(conversationId: String, runId: String): RunFinished =
        request(RunCancel(conversationId = conversationId, runId = runId))

    /** `approval.respond`: any of the four choices; [reason] goes to the agent with `deny`. */
    suspend fun respondToApproval(approvalId: String, choice: ApprovalChoice, reason: String? = null): ApprovalResolved =
        request(ApprovalRespond(approvalId = approvalId, choice = choice, reason = reason))

    /** `clarify.respond`: one of the question's choices, or free text (always allowed). */
    suspend fun respondToClarification(clarifyId: String, response: String): ClarifyResolved =
        request(ClarifyRespond(clarifyId = clarifyId, response = response))

    /** `yolo.current`: whether the conversation auto-approves. */
    suspend fun currentYolo(conversationId: String): YoloSnapshot = request(YoloCurrent(conversationId = conversationId))

    /** `yolo.set`: turn auto-approve on or off for a conversation (broadcast). */
    suspend fun setYolo(conversationId: String, enabled: Boolean): YoloChanged =
        request(YoloSet(conversationId = conversationId, enabled = enabled))

    /** `models.list`: providers and models; with [conversationId], its current model. */
    suspend fun listModels(conversationId: String? = null): ModelsSnapshot = request(ModelsList(conversationId = conversationId))

    /** `models.current`: the global model, or the conversation's effective one. */
    suspend fun currentModel(conversationId: String? = null): ModelCurrent = request(ModelsCurrent(conversationId = conversationId))

    /** `model.set`: with [conversationId] a conversation override, without it the global default (broadcast). */
    suspend fun setModel(model: String, provider: String? = null, conversationId: String? = null): ModelChanged =
        request(ModelSet(model = model, provider = provider, conversationId = conversationId))

    /** `reasoning.current`: the global effort, or the conversation's effective one. */
    suspend fun currentReasoning(conversationId: String? = null): ReasoningSnapshot =
        request(ReasoningCurrent(conversationId = conversationId))

    /** `reasoning.set` (`none` turns thinking off); scoped like [setModel]. */
    suspend fun setReasoning(effort: ReasoningEffort, conversationId: String? = null): ReasoningChanged =
        request(ReasoningSet(effort = effort, conversationId = conversationId))

    /**
     * Sends a message and emits its run as it happens, then completes: the `run.accepted` reply, then
     * the conversation's `message.start`, `message.delta` (the whole draft each time), `tool.event`,
     * `approval.request` / `clarify.request` and their `*.resolved`, `attachment.added`,
     * `message.complete` (notices included), and finally the run's `run.finished`.
     *
     * Answer questions from the collector (`respondToApproval`, …). If the connection drops meanwhile,
     * the flow goes on after the reconnect: it emits the conversation's fresh `conversation.history`,
     * and completes right after it when the run is no longer active (it ended, or the server
     * restarted); otherwise the run's frames continue. Throws [PhebyException] if `chat.send` is
     * refused (e.g. `run_active`) or the connection fails for good. Cancelling the collection stops
     * listening, not the run ([cancelRun] does that).
     */
    fun chat(conversationId: String, text: String, attachmentIds: List<String> = emptyList()): Flow<ServerMessage> = channelFlow {
        val sendId = newRequestId()
        val snapshotId = AtomicReference<String?>(null)
        val subscribed = CompletableDeferred<Unit>()
        val done = CompletableDeferred<Unit>()
        val run = RunFrames(conversationId, sendId)
        launch(start = CoroutineStart.UNDISPATCHED) {
            events.onSubscription { subscribed.complete(Unit) }.collect { message ->
                val snapshot = message is ConversationHistory && message.requestId != null && message.requestId == snapshotId.get()
                if (snapshot || run.accepts(message)) send(message)
                if ((snapshot && !run.isActiveIn(message as ConversationHistory)) || run.finishedBy(message)) done.complete(Unit)
            }
        }
        // A new connection while the run streams: ask for the conversation's snapshot (see above).
        val connection = (stateFlow.value as? ConnectionState.Open)?.ready
        launch {
            stateFlow.collect { state ->
                when (state) {
                    is ConnectionState.Open -> if (state.ready !== connection && run.runId != null) {
                        val id = newRequestId().also(snapshotId::set)
                        try {
                            request(ConversationOpen(requestId = id, conversationId = conversationId), ConversationHistory::class)
                        } catch (e: PhebyException) {
                            if (e.code != PhebyException.CONNECTION_CLOSED) done.completeExceptionally(e)
                        }
                    }
                    is ConnectionState.Failed -> done.completeExceptionally(state.error)
                    is ConnectionState.Closed -> done.completeExceptionally(
                        state.error ?: PhebyException(PhebyException.CONNECTION_CLOSED, "the client was closed"),
                    )
                    else -> Unit
                }
            }
        }
        subscribed.await()
        request(ChatSend(requestId = sendId, conversationId = conversationId, text = text, attachmentIds = attachmentIds.ifEmpty { null }), RunAccepted::class)
        done.await()
        coroutineContext.cancelChildren()
    }

    /**
     * Follow a conversation: after every reconnect it is re-opened (with [limit]) and its snapshot
     * arrives in [events] and [resyncs], so the app can replace its local state (history,
     * attachments, run, tools, pending decisions), as the protocol's reconnect procedure says.
     */
    fun follow(conversationId: String, limit: Int? = null) {
        followed[conversationId] = Follow(limit?.toLong())
    }

    /** Stop following a conversation. */
    fun unfollow(conversationId: String) {
        followed.remove(conversationId)
    }

    /**
     * Re-opens every followed conversation now and returns the snapshots (also emitted on [resyncs]).
     * A conversation deleted meanwhile is dropped from the followed set. Runs by itself after each reconnect.
     */
    suspend fun resync(): Map<String, ConversationHistory> {
        val current = synchronized(lock) { link?.takeIf { it.ready } }
            ?: throw PhebyException(PhebyException.CONNECTION_CLOSED, "not connected")
        val snapshots = LinkedHashMap<String, ConversationHistory>()
        for ((conversationId, follow) in followed.toMap()) {
            val reopen = current.extensions.firstNotNullOfOrNull { it.reopen(conversationId, follow.limit) }
                ?: ConversationOpen(conversationId = conversationId, limit = follow.limit)
            try {
                snapshots[conversationId] = exchange(current, reopen, ConversationHistory::class, options.requestTimeout)
            } catch (e: PhebyException) {
                if (e.code == "conversation_not_found") followed.remove(conversationId) else throw e
            }
        }
        resyncFlow.emit(snapshots)
        return snapshots
    }

    /**
     * Uploads a file to a conversation (`POST /attachments`), streaming [content] (not closed here) with
     * progress; [contentLength] null sends it chunked. Returns the stored attachment: claim it with its
     * `attachmentId` in [sendMessage] / [chat]. Cancelling the coroutine cancels the upload. Throws
     * [PhebyException] with the HTTP error's code and [PhebyException.status] (401, 400, 413, 429, …).
     */
    suspend fun upload(
        conversationId: String,
        filename: String,
        content: InputStream,
        contentLength: Long? = null,
        contentType: String = "application/octet-stream",
        onProgress: ProgressListener? = null,
    ): AttachmentDescriptor = attachments.upload(conversationId, filename, content, contentLength, contentType, onProgress)

    /** Uploads [file] under its own name; see the stream overload. */
    suspend fun upload(
        conversationId: String,
        file: File,
        contentType: String = "application/octet-stream",
        onProgress: ProgressListener? = null,
    ): AttachmentDescriptor = file.inputStream().use { upload(conversationId, file.name, it, file.length(), contentType, onProgress) }

    /**
     * Downloads an attachment (`GET` its `download_path`, authenticated) into [to] (not closed here),
     * with progress. [range] asks for one byte range (`"bytes=0-99"`, `"bytes=100-"` to resume,
     * `"bytes=-500"` for the tail; the `bytes=` may be left out); the answer is then 206. Cancelling the
     * coroutine cancels the download. Throws [PhebyException]: `not_found` (404: unknown or expired),
     * `unauthorized` (401), a 416 for a range past the end, ….
     */
    suspend fun download(
        attachment: AttachmentDescriptor,
        to: OutputStream,
        range: String? = null,
        onProgress: ProgressListener? = null,
    ): Download = download(attachment.downloadPath, to, range, onProgress)

    /** [download] by `download_path` (e.g. `/attachments/<id>`). */
    suspend fun download(downloadPath: String, to: OutputStream, range: String? = null, onProgress: ProgressListener? = null): Download =
        attachments.download(downloadPath, to, range, onProgress)

    // --- the connection ---

    private fun newRequestId(): String = "k${nextId.getAndIncrement()}"

    /** The `hello` of every connection but a pairing one. */
    private fun secretHello(requestId: String) =
        Hello(requestId = requestId, secret = options.secret, protocolVersion = 1, features = helloFeatures.ifEmpty { null })

    /** Opens a connection and completes the handshake with [hello]; on any failure the connection is closed again. */
    private suspend fun handshake(hello: (requestId: String) -> Hello = ::secretHello): Ready {
        val attempt = Link()
        synchronized(lock) {
            if (closed) throw PhebyException(PhebyException.CONNECTION_CLOSED, "the client was closed")
            link = attempt
        }
        try {
            attempt.socket = http.newWebSocket(Request.Builder().url(options.url).build(), attempt)
            withTimeoutOrNull(options.requestTimeout) { attempt.opened.await() }
                ?: throw PhebyException(PhebyException.TIMEOUT, "the WebSocket to ${options.url} did not open within ${options.requestTimeout}")
            return exchange(attempt, hello(attempt.helloId), Ready::class, options.requestTimeout)
        } catch (e: Throwable) {
            synchronized(lock) { if (link === attempt) link = null }
            attempt.cancel()
            throw e
        }
    }

    private suspend fun <R : ServerMessage> exchange(on: Link, message: ClientMessage, reply: KClass<R>, timeout: Duration): R {
        val fields = PhebyJson.encodeToJsonElement(ClientMessage.serializer(), message).jsonObject
        val requestId = message.requestId ?: newRequestId()
        val type = (fields["type"] as? JsonPrimitive)?.content
        val waiter = Pending(on, reply)
        require(pending.putIfAbsent(requestId, waiter) == null) { "request_id $requestId is already waiting for a reply" }
        try {
            // A connection that closed before the waiter was registered did not fail it: throw why it closed
            // (e.g. rate_limited for a socket refused as soon as it opened). One that is closing cannot take
            // the frame (send is false), and its close fails the waiter with that reason.
            on.closedBy.get()?.let { throw it.forRequest(requestId) }
            on.send(JsonObject(fields + ("request_id" to JsonPrimitive(requestId))).toString())
            val result = withTimeoutOrNull(timeout) { waiter.reply.await() }
                ?: throw PhebyException(PhebyException.TIMEOUT, "no reply to $type within $timeout", requestId)
            return reply.java.cast(result)
        } finally {
            pending.remove(requestId, waiter)
        }
    }

    /** One frame from the server, on the connection's reader thread: decode, extensions, reply, event. */
    private fun onFrame(from: Link, text: String) {
        if (synchronized(lock) { link !== from }) return
        val json = try {
            PhebyJson.parseToJsonElement(text)
        } catch (e: SerializationException) {
            invalidFlow.tryEmit(InvalidFrame(text, e.message ?: "not JSON"))
            return
        }
        val requestId = ((json as? JsonObject)?.get("request_id") as? JsonPrimitive)?.takeIf { it.isString }?.content
        val decoded = try {
            PhebyJson.decodeFromJsonElement(ServerMessage.serializer(), json)
        } catch (e: IllegalArgumentException) {
            invalidFlow.tryEmit(InvalidFrame(text, e.message ?: "does not decode"))
            // A reply that does not decode still ends its request, rather than leaving it to time out.
            val waiter = requestId?.let(pending::get)
            waiter?.takeIf { it.on === from }?.reply?.completeExceptionally(
                PhebyException(PhebyException.INVALID_FRAME, "the reply does not match the protocol: ${e.message}", requestId),
            )
            return
        }
        if (decoded is Ready && requestId == from.helloId) authenticated(from, decoded)
        var message: ServerMessage = decoded
        for (extension in from.extensions) message = extension.onFrame(message, from) ?: return
        if (message is ProtocolError && requestId == null) from.lastError = message.toException()
        // Emitted before the request resumes: a collector that starts after a request returned never
        // sees that request's reply as a fresh event.
        eventFlow.tryEmit(message)
        val waiter = requestId?.let(pending::get)?.takeIf { it.on === from }
        when {
            waiter == null -> Unit
            message is ProtocolError -> waiter.reply.completeExceptionally(message.toException())
            waiter.type.isInstance(message) -> waiter.reply.complete(message)
        }
    }

    /** `ready` answered this connection's hello: enable its extensions before its next frame, then report it open. */
    private fun authenticated(on: Link, ready: Ready) {
        val enabled = ready.features.orEmpty().toSet()
        on.extensions = extensions.filter { it.feature in enabled }
        on.extensions.forEach { it.onConnected(on) }
        on.ready = true
        stateFlow.value = ConnectionState.Open(ready, enabled)
    }

    /** A connection ended (closed by either side, or broken). Called once per connection. */
    private fun onLinkClosed(ended: Link, failure: PhebyException) {
        if (!ended.closedBy.compareAndSet(null, failure)) return
        ended.opened.completeExceptionally(failure)
        failPending(ended, failure)
        synchronized(lock) {
            if (link !== ended) return
            link = null
            when {
                !ended.ready -> Unit // a handshake: handshake() throws the failure
                failure.isFinal -> stateFlow.value = ConnectionState.Failed(failure)
                options.reconnect == null -> stateFlow.value = ConnectionState.Closed(failure)
                else -> startReconnect(failure, immediately = false)
            }
        }
    }

    private fun failPending(on: Link, failure: PhebyException) {
        for ((requestId, waiter) in pending) {
            if (waiter.on === on) waiter.reply.completeExceptionally(failure.forRequest(requestId))
        }
    }

    /** Reconnect until it works or fails for good: backoff, or the lockout's wait; then re-open what is followed. Under [lock]. */
    private fun startReconnect(first: PhebyException, immediately: Boolean) {
        val policy = options.reconnect ?: ReconnectPolicy()
        reconnectJob?.cancel()
        reconnectJob = scope.launch {
            var cause = first
            var attempt = 0
            var wait = if (immediately) Duration.ZERO else policy.delayAfter(cause, attempt)
            while (true) {
                stateFlow.value = ConnectionState.Reconnecting(attempt + 1, wait, cause)
                delay(wait)
                try {
                    handshake()
                } catch (e: PhebyException) {
                    if (e.isFinal) {
                        stateFlow.value = ConnectionState.Failed(e)
                        return@launch
                    }
                    cause = e
                    attempt++
                    wait = policy.delayAfter(cause, attempt)
                    continue
                }
                try {
                    resync()
                } catch (e: PhebyException) {
                    // The new connection dropped too; its close has started the next round.
                }
                return@launch
            }
        }
    }

    /** One WebSocket connection and its listener (OkHttp calls it on the connection's reader thread). */
    private inner class Link : WebSocketListener(), ExtensionLink {
        @Volatile var socket: WebSocket? = null
        val opened = CompletableDeferred<Unit>()
        val helloId = newRequestId()

        @Volatile var ready = false

        @Volatile var extensions: List<ClientExtension> = emptyList()

        /** The last `error` without a `request_id` (e.g. `rate_limited` before a 4429): it explains the close. */
        @Volatile var lastError: PhebyException? = null

        /** Why the connection ended, once it has (set once, before its waiters are failed). */
        val closedBy = AtomicReference<PhebyException?>(null)

        fun send(text: String): Boolean = socket?.send(text) ?: false

        override fun send(message: ClientMessage): Boolean = send(message.toJson())

        fun cancel() {
            socket?.cancel()
        }

        fun close() {
            socket?.close(CloseCodes.NORMAL, "client closed")
        }

        override fun onOpen(webSocket: WebSocket, response: Response) {
            socket = webSocket
            opened.complete(Unit)
        }

        override fun onMessage(webSocket: WebSocket, text: String) = onFrame(this, text)

        override fun onMessage(webSocket: WebSocket, bytes: ByteString) = onFrame(this, bytes.utf8())

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            webSocket.close(CloseCodes.NORMAL, null) // answer the close; OkHttp reports onClosed after it
            onLinkClosed(this, CloseCodes.failure(code, reason, lastError))
        }

        override fun onClosed(webSocket: WebSocket, code: Int, reason: String) =
            onLinkClosed(this, CloseCodes.failure(code, reason, lastError))

        override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) {
            val host = response?.request?.url?.host ?: webSocket.request().url.host
            val message = if (response != null) {
                "$host answered the WebSocket upgrade with HTTP ${response.code} (is ${webSocket.request().url.encodedPath} the server's WebSocket endpoint?)"
            } else {
                "cannot reach $host: ${t.message ?: t.javaClass.simpleName}"
            }
            onLinkClosed(
                this,
                lastError?.takeIf { response == null && it.code != PhebyException.CONNECTION_CLOSED }
                    ?: PhebyException(PhebyException.CONNECTION_CLOSED, message, status = response?.code, closeCode = CloseCodes.ABNORMAL, cause = t),
            )
        }
    }

    private class Pending(val on: Link, val type: KClass<out ServerMessage>) {
        val reply = CompletableDeferred<ServerMessage>()
    }

    private class Follow(val limit: Long?)

    /** The client's instance of a built-in extension, when [options] asked for its feature. */
    internal inline fun <reified T : ClientExtension> extension(): T? = extensions.firstNotNullOfOrNull { it as? T }

    /** What needs no client yet: [pairDevice] (a phone's first connection, with a pairing code). */
    companion object
}

/** A frame the server sent that the models cannot decode: its [raw] text and why. */
data class InvalidFrame(val raw: String, val reason: String)

/** This failure as the one request [requestId] throws. */
internal fun PhebyException.forRequest(requestId: String): PhebyException =
    PhebyException(code, message ?: "", requestId, status, closeCode, retryAfter, cause)

/** An `error` frame as the exception a request throws. */
internal fun ProtocolError.toException(): PhebyException = PhebyException(
    code = error.code.value,
    message = error.message,
    requestId = requestId,
    retryAfter = CloseCodes.retryAfter(error.message),
)
