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
import dev.pheby.protocol.stringOrNull
import dev.pheby.protocol.toJson
import kotlinx.coroutines.CancellationException
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
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
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
import java.util.Collections
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
 * (never after a wrong secret or protocol version; after a lockout once it has expired) and the
 * conversations passed to [follow] are re-opened: with `resume`, from the last `seq` handled, so only the
 * missed frames arrive on [events], as if never missed; otherwise (or when the server can no longer
 * replay) as snapshots on [events] and [resyncs]. With `resume`, sends (`chat.send`,
 * `conversation.create`) carry a `client_message_id`, wait in the send queue while the connection is down,
 * and a send whose reply was lost in a drop is sent again (the server answers a repeat with the first
 * outcome). [state] says where the connection stands.
 *
 * Thread-safe. [close] it when done.
 */
class PhebyClient(
    /** The settings this client was made with; nothing happens until [connect]. */
    val options: PhebyClientOptions,
) : AutoCloseable {

    private val ownsHttp = options.httpClient == null
    private val http: OkHttpClient = (options.httpClient ?: OkHttpClient()).newBuilder()
        .pingInterval(options.pingInterval.inWholeMilliseconds, TimeUnit.MILLISECONDS)
        .build()
    internal val routes = HttpRoutes(http, options.url, options.secret)
    private val attachments = Attachments(routes)
    internal val extensions: List<ClientExtension> = Drafts().let { drafts ->
        BUILT_IN_EXTENSIONS.filterKeys { it in options.features }.values.map { it(drafts) }
    }
    private val resume: Resume? = extension()
    // At most 16, the ones that change most what the app can show first: an older server closes a longer list.
    private val helloFeatures: List<String> = Features.helloNames(options.features)
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default + CoroutineName("pheby-client"))

    private val stateFlow = MutableStateFlow<ConnectionState>(ConnectionState.Idle)

    // Unbounded, so the reader thread never blocks on a slow collector and no frame is dropped.
    private val eventFlow = MutableSharedFlow<ServerMessage>(extraBufferCapacity = Int.MAX_VALUE)
    private val invalidFlow = MutableSharedFlow<InvalidFrame>(extraBufferCapacity = 64, onBufferOverflow = BufferOverflow.DROP_OLDEST)
    private val resyncFlow = MutableSharedFlow<Map<String, ConversationHistory>>(extraBufferCapacity = 16, onBufferOverflow = BufferOverflow.DROP_OLDEST)

    /** Requests sent and waiting for their reply, by `request_id`. */
    private val pending = ConcurrentHashMap<String, Outgoing>()
    /** Re-opened after every reconnect, in the order they were followed. Synchronized on itself. */
    private val followed: MutableMap<String, Follow> = Collections.synchronizedMap(LinkedHashMap())
    private val nextId = AtomicLong(1)

    // Guarded by lock: the current connection, what happens when it ends, and the sends waiting for the
    // next one (`resume`), in the order they were first made. While reconnectJob runs (reconnecting, then
    // catching up the followed conversations), new sends join the send queue so they keep their order.
    private val lock = Any()
    private var link: Link? = null
    private var reconnectJob: Job? = null
    private var closed = false
    private val sendQueue = ArrayList<Outgoing>()

    /** A reconnect loop is running (reconnecting, or catching up after it); false once it ended or failed for good. */
    internal val reconnecting: Boolean get() = synchronized(lock) { reconnectJob?.isActive == true }

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

    /**
     * After each reconnect, the fresh snapshots of the [follow]ed conversations, by conversation ID: replace
     * their local state. With `resume`, a conversation the server resumed is not in it (its missed frames
     * arrived on [events] after a `ConversationResumed`); one it could not (`resumed == false`) is.
     */
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
        publish(ConnectionState.Connecting)
        return try {
            handshake(hello, repairs = false).also { flushSendQueue(thisJob = null) }
        } catch (e: PhebyException) {
            publish(if (e.isFinal) ConnectionState.Failed(e) else ConnectionState.Closed(e))
            failSendQueue(e)
            throw e
        } catch (e: CancellationException) {
            // The caller gave up: not left Connecting (handshake() has cancelled the attempt).
            publish(ConnectionState.Closed(null))
            throw e
        }
    }

    /**
     * Drops the current connection and reconnects at once (e.g. when the device switched networks, so
     * the old path is dead but no ping has failed yet). Requests in flight fail with
     * [PhebyException.CONNECTION_CLOSED], except sends that `resume` makes safe to send again. Does
     * nothing unless connected or reconnecting.
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
            // Under the lock, so no reconnect or reader publishing at the same time overwrites it (see publish).
            stateFlow.value = ConnectionState.Closed(null)
            link.also { link = null }
        }
        val failure = PhebyException(PhebyException.CONNECTION_CLOSED, "the client was closed")
        last?.let {
            it.close()
            failPending(it, failure, retain = false)
        }
        failSendQueue(failure)
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
     * (`ChatSend` → `RunAccepted`, …) or a supertype of it; a `ChatSend` with `queue` may also get
     * `RunQueued` and a `ConversationOpen` with `sinceSeq` `ConversationResumed`, so ask for
     * `ServerMessage` there. A [ClientMessage.Unknown] (an extension's request) may name any.
     *
     * With `resume` asked for ([PhebyClientOptions.features]), a `ChatSend` or `ConversationCreate`
     * without `clientMessageId` gets one ([newClientMessageId]), and such a send is safe to repeat:
     * while the client is reconnecting it waits in the send queue and goes out once the connection is back
     * (after the followed conversations are caught up); when the connection drops before its reply, it
     * is sent again on the next connection if that one enabled `resume` (the server answers a repeat
     * with the first outcome, never a second run), and fails with [PhebyException.CONNECTION_CLOSED]
     * otherwise. [timeout] counts from each time it is sent.
     */
    suspend fun <R : ServerMessage> request(message: ClientMessage, reply: KClass<R>, timeout: Duration = options.requestTimeout): R {
        val out = outgoing(stamp(message), reply, timeout)
        synchronized(lock) {
            val current = link?.takeIf { it.ready }
            val recovering = reconnectJob?.isActive == true
            when {
                current != null && !(out.retry && recovering) -> transmit(current, out)
                out.retry && recovering && !closed -> sendQueue += out
                else -> throw PhebyException(PhebyException.CONNECTION_CLOSED, "not connected")
            }
        }
        return await(out, reply)
    }

    /** [request] with the reply type as a type argument: `client.request<RunAccepted>(ChatSend(…))`. */
    suspend inline fun <reified R : ServerMessage> request(message: ClientMessage, timeout: Duration = options.requestTimeout): R =
        request(message, R::class, timeout)

    /** `ping` → `pong`. */
    suspend fun ping(): Pong = request(Ping())

    /**
     * `conversation.list`: every conversation. On an `inbox` connection ([Features.INBOX]) the unarchived
     * ones, or with [archived] the archived ones only. On a `workspaces` connection ([Features.WORKSPACES])
     * only those of agent [agentId] and of workspace [workspaceId] when given, and each entry says its
     * `agentId`, `workspaceId` and `branch`. A server without the feature ignores the filters (a v1 list
     * is every conversation); false and null are not sent, so the request stays v1's.
     */
    suspend fun listConversations(archived: Boolean = false, agentId: String? = null, workspaceId: String? = null): ConversationSnapshot =
        request(ConversationList(archived = archived.takeIf { it }, agentId = agentId, workspaceId = workspaceId))

    /**
     * `conversation.create`; every client also gets `conversation.updated`. With `resume` it carries
     * [clientMessageId] (a new one when null), so a retry after a drop never creates a second one.
     *
     * With `workspaces` ([Features.WORKSPACES]) it picks the agent ([agentId]) and the workspace
     * ([workspaceId]) of [listAgents] / [listWorkspaces]: neither is the default agent in the first
     * workspace that allows it, only a workspace its first agent, only an agent the first workspace that
     * allows it; [worktree] gives the conversation a git worktree of its own on a new branch
     * `pheby/<8 characters of its ID>` (the reply's `branch`). An unknown ID, an agent the workspace does not
     * allow, or a worktree outside a git repository: `bad_request` naming the field, and nothing is created.
     * Null and false are not sent (a server without the feature ignores them anyway).
     */
    suspend fun createConversation(
        name: String? = null,
        clientMessageId: String? = null,
        agentId: String? = null,
        workspaceId: String? = null,
        worktree: Boolean = false,
    ): ConversationCreated = request(
        ConversationCreate(
            name = name,
            clientMessageId = clientMessageId,
            agentId = agentId,
            workspaceId = workspaceId,
            worktree = worktree.takeIf { it },
        ),
    )

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
     * With `resume` it carries [clientMessageId] (a new one when null; the user message in history
     * carries it too) and is retried safely across a drop (see [request]). While a run is active it
     * fails with `run_active`; [queueMessage] queues it instead.
     */
    suspend fun sendMessage(
        conversationId: String,
        text: String,
        attachmentIds: List<String> = emptyList(),
        clientMessageId: String? = null,
    ): RunAccepted =
        request(ChatSend(conversationId = conversationId, text = text, attachmentIds = attachmentIds.ifEmpty { null }, clientMessageId = clientMessageId))

    /**
     * `run.cancel`: returns the run's single `run.finished` (`cancelled`). A run no longer active:
     * `not_found`. With `queue`, a queued run's ID removes it from the queue (its `run.finished` is
     * `cancelled` too; the other `queue` clients get `queue.changed`).
     */
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

    // The global model and reasoning calls take [agentId] with `workspaces` ([Features.WORKSPACES]): the
    // agent whose global setting they read or set (null: the default agent, as on a v1 connection). With a
    // conversationId, it must be that conversation's agent (else `bad_request` naming `agent_id`); a
    // conversation's calls act on its own agent anyway. A global change of another agent than the default
    // reaches only `workspaces` clients, with its `agentId`.

    /** `models.list`: providers and models (of agent [agentId]); with [conversationId], its current model. */
    suspend fun listModels(conversationId: String? = null, agentId: String? = null): ModelsSnapshot =
        request(ModelsList(conversationId = conversationId, agentId = agentId))

    /** `models.current`: the global model (of agent [agentId]), or the conversation's effective one. */
    suspend fun currentModel(conversationId: String? = null, agentId: String? = null): ModelCurrent =
        request(ModelsCurrent(conversationId = conversationId, agentId = agentId))

    /** `model.set`: with [conversationId] a conversation override, without it the global default of agent [agentId] (broadcast). */
    suspend fun setModel(model: String, provider: String? = null, conversationId: String? = null, agentId: String? = null): ModelChanged =
        request(ModelSet(model = model, provider = provider, conversationId = conversationId, agentId = agentId))

    /** `reasoning.current`: the global effort (of agent [agentId]), or the conversation's effective one. */
    suspend fun currentReasoning(conversationId: String? = null, agentId: String? = null): ReasoningSnapshot =
        request(ReasoningCurrent(conversationId = conversationId, agentId = agentId))

    /** `reasoning.set` (`none` turns thinking off); scoped like [setModel]. */
    suspend fun setReasoning(effort: ReasoningEffort, conversationId: String? = null, agentId: String? = null): ReasoningChanged =
        request(ReasoningSet(effort = effort, conversationId = conversationId, agentId = agentId))

    /**
     * Sends a message and emits its run as it happens, then completes: the `run.accepted` reply, then
     * the conversation's `message.start`, `message.delta` (the whole draft each time), `tool.event`,
     * `approval.request` / `clarify.request` and their `*.resolved`, `attachment.added`,
     * `message.complete` (notices included), and finally the run's `run.finished`. With the extensions
     * enabled, also its `thought.delta` (the whole thought each time) and `thought.complete` (`thoughts`),
     * `plan.updated` and `usage.updated` (`activity`).
     *
     * With [queue] (the `queue` extension) a send during another run is queued: the flow first emits
     * `run.queued` and the conversation's `queue.changed` while it waits, then the run as above once it
     * starts (or its `run.finished` `cancelled`, when [cancelRun] removed it from the queue). [clientMessageId]
     * is as in [sendMessage].
     *
     * Answer questions from the collector (`respondToApproval`, …). The conversation is [follow]ed while
     * the flow runs, so a drop does not lose the run: after the reconnect, with `resume` the missed frames
     * follow as if never missed (a send whose reply was lost is sent again first, without a second run);
     * without, the flow emits the conversation's fresh `conversation.history` and completes right after it
     * when the run is no longer active (it ended, or the server restarted), else the run's frames
     * continue. Throws [PhebyException] if `chat.send` is refused (e.g. `run_active`) or the connection
     * fails for good. Cancelling the collection stops listening, not the run ([cancelRun] does that).
     */
    fun chat(
        conversationId: String,
        text: String,
        attachmentIds: List<String> = emptyList(),
        queue: Boolean = false,
        clientMessageId: String? = null,
    ): Flow<ServerMessage> = channelFlow {
        val send = stamp(
            ChatSend(
                requestId = newRequestId(),
                conversationId = conversationId,
                text = text,
                attachmentIds = attachmentIds.ifEmpty { null },
                clientMessageId = clientMessageId,
                queue = true.takeIf { queue },
            ),
        ) as ChatSend
        val run = RunFrames(conversationId, send.requestId!!, send.clientMessageId)
        // take() and learn() run on two coroutines; this keeps what they emit in order.
        val emitting = Mutex()
        val subscribed = CompletableDeferred<Unit>()
        val done = CompletableDeferred<Unit>()
        suspend fun emit(frames: List<ServerMessage>) {
            for (frame in frames) send(frame)
            if (run.finished) done.complete(Unit)
        }
        launch(start = CoroutineStart.UNDISPATCHED) {
            events.onSubscription { subscribed.complete(Unit) }.collect { message -> emitting.withLock { emit(run.take(message)) } }
        }
        launch {
            stateFlow.collect { state ->
                when (state) {
                    is ConnectionState.Failed -> done.completeExceptionally(state.error)
                    is ConnectionState.Closed -> done.completeExceptionally(
                        state.error ?: PhebyException(PhebyException.CONNECTION_CLOSED, "the client was closed"),
                    )
                    else -> Unit
                }
            }
        }
        val following = Follow(null)
        val added = followed.putIfAbsent(conversationId, following) == null
        try {
            subscribed.await()
            val reply = request(send, ServerMessage::class)
            emitting.withLock { emit(run.learn(reply)) }
            done.await()
        } finally {
            if (added) followed.remove(conversationId, following)
        }
        coroutineContext.cancelChildren()
    }

    /**
     * Follow a conversation: after every reconnect it is re-opened (with [limit]; in the order followed): with `resume` from the
     * last `seq` handled, so its missed frames arrive on [events] as if never missed; otherwise, or when
     * the server can no longer replay them, its snapshot arrives in [events] and [resyncs], so the app
     * can replace its local state (history, attachments, run, tools, pending decisions), as the
     * protocol's reconnect procedure says.
     */
    fun follow(conversationId: String, limit: Int? = null) {
        followed[conversationId] = Follow(limit?.toLong())
    }

    /** Stop following a conversation. */
    fun unfollow(conversationId: String) {
        followed.remove(conversationId)
    }

    /**
     * The last `seq` handled for a conversation (`resume`): where a re-open after a drop resumes from;
     * null before any (or without `resume`).
     */
    fun position(conversationId: String): Long? = resume?.position(conversationId)

    /**
     * Re-opens every followed conversation now (with `resume`, from their last `seq`; their events are
     * held back until each answer, whose replay carries them) and returns the snapshots, also emitted on
     * [resyncs]; a resumed conversation is not among them (see [resyncs]). A conversation deleted
     * meanwhile is dropped from the followed set. Runs by itself after each reconnect.
     */
    suspend fun resync(): Map<String, ConversationHistory> = resync(recovering = false)

    /**
     * [resync]; [recovering]: the reconnect loop's catch-up. When a re-open fails on a live connection
     * (a timeout, a reply that does not decode, a server error), that connection is cancelled before the
     * conversations stop being held back, so the next round catches them up from where they were instead
     * of leaving a silent gap.
     */
    private suspend fun resync(recovering: Boolean): Map<String, ConversationHistory> {
        val current = synchronized(lock) { link?.takeIf { it.ready } }
            ?: throw PhebyException(PhebyException.CONNECTION_CLOSED, "not connected")
        val follows = synchronized(followed) { followed.mapValues { it.value.limit } }
        val resyncId = { "$RESYNC_REQUEST_PREFIX${nextId.getAndIncrement()}" }
        val reopens = if (current.resume && resume != null) {
            resume.reopen(follows, resyncId)
        } else {
            follows.mapValues { (id, limit) -> ConversationOpen(requestId = resyncId(), conversationId = id, limit = limit) }
        }
        val snapshots = LinkedHashMap<String, ConversationHistory>()
        for ((conversationId, reopen) in reopens) {
            try {
                val answer = exchange(current, reopen, ServerMessage::class)
                if (answer is ConversationHistory) snapshots[conversationId] = answer
            } catch (e: PhebyException) {
                if (recovering && e.code != "conversation_not_found" && e.code != PhebyException.CONNECTION_CLOSED) current.cancel()
                resume?.synced(conversationId)
                if (e.code != "conversation_not_found") {
                    reopens.keys.forEach { resume?.synced(it) }
                    throw e
                }
                followed.remove(conversationId)
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

    /**
     * Opens a connection and completes the handshake with [hello]; on any failure the connection is
     * closed again. [repairs]: it replaces a dropped one (the reconnect loop), so with `resume` the
     * followed conversations are caught up from its `ready` on.
     */
    private suspend fun handshake(hello: (requestId: String) -> Hello = ::secretHello, repairs: Boolean): Ready {
        val attempt = Link(repairs)
        synchronized(lock) {
            if (closed) throw PhebyException(PhebyException.CONNECTION_CLOSED, "the client was closed")
            link = attempt
        }
        try {
            attempt.socket = http.newWebSocket(Request.Builder().url(options.url).build(), attempt)
            withTimeoutOrNull(options.requestTimeout) { attempt.opened.await() }
                ?: throw PhebyException(PhebyException.TIMEOUT, "the WebSocket to ${options.url} did not open within ${options.requestTimeout}")
            return exchange(attempt, hello(attempt.helloId), Ready::class)
        } catch (e: Throwable) {
            synchronized(lock) { if (link === attempt) link = null }
            attempt.cancel()
            throw e
        }
    }

    /** With `resume` asked for, a send without `client_message_id` gets one. */
    private fun stamp(message: ClientMessage): ClientMessage = when {
        Features.RESUME !in options.features || message.sendKey != null -> message
        message is ChatSend -> message.copy(clientMessageId = newClientMessageId())
        message is ConversationCreate -> message.copy(clientMessageId = newClientMessageId())
        else -> message
    }

    /** The `client_message_id` of a send that may carry one (`chat.send`, `conversation.create`), if it does. */
    private val ClientMessage.sendKey: String?
        get() = when (this) {
            is ChatSend -> clientMessageId
            is ConversationCreate -> clientMessageId
            else -> null
        }

    /** [message] ready to send: its frame with a `request_id`, the replies it may get, and whether a drop may repeat it. */
    private fun outgoing(message: ClientMessage, reply: KClass<out ServerMessage>, timeout: Duration): Outgoing {
        val replies = repliesTo(message) ?: listOf(reply)
        require(replies.all { reply.java.isAssignableFrom(it.java) }) {
            "the reply to ${message::class.simpleName} is ${replies.joinToString(" or ") { it.simpleName.orEmpty() }}, not ${reply.simpleName}"
        }
        val fields = PhebyJson.encodeToJsonElement(ClientMessage.serializer(), message).jsonObject
        val requestId = message.requestId ?: newRequestId()
        return Outgoing(
            requestId = requestId,
            frame = JsonObject(fields + ("request_id" to JsonPrimitive(requestId))).toString(),
            type = (fields["type"] as? JsonPrimitive)?.content,
            replies = replies,
            retry = message.sendKey != null && Features.RESUME in options.features,
            timeout = timeout,
        )
    }

    /** Sends [message] on [on] (never through the send queue: the handshake, the re-opens) and returns its reply. */
    private suspend fun <R : ServerMessage> exchange(on: Link, message: ClientMessage, reply: KClass<R>): R {
        val out = outgoing(message, reply, options.requestTimeout)
        transmit(on, out)
        return await(out, reply)
    }

    /** Sends [out] on [on] and starts its timeout. */
    private fun transmit(on: Link, out: Outgoing) {
        require(pending.putIfAbsent(out.requestId, out) == null) { "request_id ${out.requestId} is already waiting for a reply" }
        out.link = on
        out.sent = true
        out.timer?.cancel()
        out.timer = scope.launch {
            delay(out.timeout)
            if (pending.remove(out.requestId, out)) {
                out.reply.completeExceptionally(PhebyException(PhebyException.TIMEOUT, "no reply to ${out.type} within ${out.timeout}", out.requestId))
            }
        }
        // A connection that closed before the request was registered did not see it when it failed its
        // requests: handle it as that close would have (e.g. rate_limited for a socket refused as soon as
        // it opened). One that is closing cannot take the frame (send is false), and its close handles it.
        val closedBy = on.closedBy.get()
        if (closedBy != null) dropped(out, closedBy, retain = on.resume && synchronized(lock) { reconnectJob?.isActive == true && !closed })
        else on.send(out.frame)
    }

    /** Waits for the reply to [out]; whatever happens, it no longer waits afterwards. */
    private suspend fun <R : ServerMessage> await(out: Outgoing, reply: KClass<R>): R = try {
        reply.java.cast(out.reply.await())
    } finally {
        out.timer?.cancel()
        pending.remove(out.requestId, out)
        synchronized(lock) { sendQueue.remove(out) }
    }

    /** [out]'s connection ended before its reply: keep it for the next connection ([retain] and safe to repeat), else fail it. */
    private fun dropped(out: Outgoing, failure: PhebyException, retain: Boolean) {
        if (!pending.remove(out.requestId, out)) return
        out.timer?.cancel()
        if (retain && out.retry) {
            synchronized(lock) {
                sendQueue += out
                sendQueue.sortBy { it.order }
            }
        } else {
            out.reply.completeExceptionally(failure.forRequest(out.requestId))
        }
    }

    private fun failPending(on: Link, failure: PhebyException, retain: Boolean) {
        for (out in pending.values) if (out.link === on) dropped(out, failure, retain)
    }

    private fun failSendQueue(failure: PhebyException) {
        val waiting = synchronized(lock) { sendQueue.toList().also { sendQueue.clear() } }
        for (out in waiting) out.reply.completeExceptionally(failure.forRequest(out.requestId))
    }

    /**
     * Sends what waits in the send queue on the current connection, in order, and ends the recovery ([thisJob], the
     * reconnect loop, when it called): sends made from now on go out directly. A send that already went
     * out once is sent again only on a `resume` connection, which answers a repeat with its first
     * outcome; any other server might handle it twice.
     */
    private fun flushSendQueue(thisJob: Job?) {
        val failed = ArrayList<Outgoing>()
        synchronized(lock) {
            val current = link?.takeIf { it.ready } ?: return // dropped again: the next connection flushes
            if (thisJob != null && reconnectJob === thisJob) reconnectJob = null
            for (out in sendQueue.toList()) {
                if (out.sent && !current.resume) failed += out else transmit(current, out)
            }
            sendQueue.clear()
        }
        val failure = PhebyException(PhebyException.CONNECTION_CLOSED, "the connection dropped before the reply, and this server cannot say whether it was handled")
        for (out in failed) out.reply.completeExceptionally(failure.forRequest(out.requestId))
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
        val requestId = (json as? JsonObject)?.stringOrNull("request_id")
        val waiter = requestId?.let(pending::get)?.takeIf { it.link === from }
        val decoded = try {
            PhebyJson.decodeFromJsonElement(ServerMessage.serializer(), json)
        } catch (e: IllegalArgumentException) {
            invalidFlow.tryEmit(InvalidFrame(text, e.message ?: "does not decode"))
            // A reply that does not decode still ends its request, rather than leaving it to time out.
            if (waiter != null && pending.remove(requestId, waiter)) {
                waiter.timer?.cancel()
                waiter.reply.completeExceptionally(
                    PhebyException(PhebyException.INVALID_FRAME, "the reply does not match the protocol: ${e.message}", requestId),
                )
            }
            return
        }
        val isReply = waiter != null && (decoded is ProtocolError || waiter.accepts(decoded))
        if (decoded is Ready && requestId == from.helloId) authenticated(from, decoded)
        var message: ServerMessage? = decoded
        for (extension in from.extensions) message = message?.let { extension.onFrame(it, from, isReply, json as JsonObject) }
        if (decoded is ProtocolError && requestId == null) from.lastError = decoded.toException()
        // Emitted before the request resumes: a collector that starts after a request returned never
        // sees that request's reply as a fresh event. An extension may keep a frame from the events
        // (a repeat, a frame a replay brings again); its request still gets it.
        message?.let(eventFlow::tryEmit)
        if (isReply && pending.remove(requestId, waiter)) {
            waiter!!.timer?.cancel()
            if (decoded is ProtocolError) waiter.reply.completeExceptionally(decoded.toException()) else waiter.reply.complete(message ?: decoded)
        }
    }

    /** `ready` answered this connection's hello: enable its extensions before its next frame, then report it open. */
    private fun authenticated(on: Link, ready: Ready) {
        val enabled = ready.features.orEmpty().toSet()
        on.resume = Features.RESUME in enabled
        on.extensions = extensions.filter { it.feature in enabled }
        // From now on the followed conversations' events wait for their re-open (resume's catch-up).
        if (on.repairs && on.resume) resume?.catchUp(synchronized(followed) { followed.keys.toSet() })
        on.extensions.forEach { it.onConnected(on) }
        on.ready = true
        publish(ConnectionState.Open(ready, enabled))
    }

    /** Sets [state], unless the client is closed: [close]'s `Closed` is the last state, whoever publishes after it. */
    private fun publish(state: ConnectionState) {
        synchronized(lock) { if (!closed) stateFlow.value = state }
    }

    /** A connection ended (closed by either side, or broken). Called once per connection. */
    private fun onLinkClosed(ended: Link, failure: PhebyException) {
        if (!ended.closedBy.compareAndSet(null, failure)) return
        ended.opened.completeExceptionally(failure)
        val reconnecting = synchronized(lock) {
            if (link === ended) {
                link = null
                when {
                    !ended.ready -> Unit // a handshake: handshake() throws the failure
                    failure.isFinal -> publish(ConnectionState.Failed(failure))
                    options.reconnect == null -> publish(ConnectionState.Closed(failure))
                    else -> startReconnect(failure, immediately = false)
                }
            }
            !closed && reconnectJob?.isActive == true
        }
        // Sends the server may have handled wait for the next connection when it can be asked again safely.
        failPending(ended, failure, retain = reconnecting && ended.resume)
        if (!reconnecting && ended.ready) failSendQueue(failure)
    }

    /** Reconnect until it works or fails for good: backoff, or the lockout's wait; then catch up and send the send queue. Under [lock]. */
    private fun startReconnect(first: PhebyException, immediately: Boolean) {
        val policy = options.reconnect ?: ReconnectPolicy()
        reconnectJob?.cancel()
        reconnectJob = scope.launch {
            val thisJob = coroutineContext[Job]
            var cause = first
            var attempt = 0
            var wait = if (immediately) Duration.ZERO else policy.delayAfter(cause, attempt)
            while (true) {
                publish(ConnectionState.Reconnecting(attempt + 1, wait, cause))
                delay(wait)
                try {
                    handshake(repairs = true)
                } catch (e: PhebyException) {
                    if (e.isFinal) {
                        // The loop ends before Failed is published: whoever sees Failed sees no reconnect pending.
                        synchronized(lock) { if (reconnectJob === thisJob) reconnectJob = null }
                        publish(ConnectionState.Failed(e))
                        failSendQueue(e)
                        return@launch
                    }
                    cause = e
                    attempt++
                    wait = policy.delayAfter(cause, attempt)
                    continue
                }
                try {
                    resync(recovering = true)
                } catch (e: PhebyException) {
                    // The new connection dropped (or resync cancelled it): its close starts the next round,
                    // which catches up and sends the send queue.
                    return@launch
                }
                flushSendQueue(thisJob)
                return@launch
            }
        }
    }

    /** One WebSocket connection and its listener (OkHttp calls it on the connection's reader thread). */
    private inner class Link(
        /** It replaces a dropped connection (so `resume` catches up the followed conversations). */
        val repairs: Boolean,
    ) : WebSocketListener(), ExtensionLink {
        @Volatile var socket: WebSocket? = null
        val opened = CompletableDeferred<Unit>()
        val helloId = newRequestId()

        @Volatile var ready = false

        /** The server enabled `resume` on it: a send it carried may be repeated on the next one. */
        @Volatile var resume = false

        @Volatile var extensions: List<ClientExtension> = emptyList()

        /** The last `error` without a `request_id` (e.g. `rate_limited` before a 4429): it explains the close. */
        @Volatile var lastError: PhebyException? = null

        /** Why the connection ended, once it has (set once, before its requests are failed). */
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

    /** A request on its way: its frame, who waits for its reply, and what a drop does to it. */
    private inner class Outgoing(
        val requestId: String,
        val frame: String,
        val type: String?,
        val replies: List<KClass<out ServerMessage>>,
        /** A send with a `client_message_id`, `resume` asked for: safe to send again after a drop. */
        val retry: Boolean,
        val timeout: Duration,
    ) {
        /** Sends that wait for a connection go out in the order they were made. */
        val order = nextId.getAndIncrement()
        val reply = CompletableDeferred<ServerMessage>()

        /** The connection it was last sent on. */
        @Volatile var link: Link? = null

        /** Sent at least once (one made while disconnected is not, and is safe for any server). */
        @Volatile var sent = false
        @Volatile var timer: Job? = null

        fun accepts(message: ServerMessage): Boolean = replies.any { it.isInstance(message) }
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
