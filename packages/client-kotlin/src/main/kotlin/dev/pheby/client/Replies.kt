package dev.pheby.client

import dev.pheby.protocol.ApprovalResolved
import dev.pheby.protocol.ApprovalRespond
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
import dev.pheby.protocol.ConversationResumed
import dev.pheby.protocol.ConversationSnapshot
import dev.pheby.protocol.DeviceList
import dev.pheby.protocol.DeviceRevoke
import dev.pheby.protocol.DeviceRevoked
import dev.pheby.protocol.DeviceSnapshot
import dev.pheby.protocol.Hello
import dev.pheby.protocol.ModelChanged
import dev.pheby.protocol.ModelCurrent
import dev.pheby.protocol.ModelSet
import dev.pheby.protocol.ModelsCurrent
import dev.pheby.protocol.ModelsList
import dev.pheby.protocol.ModelsSnapshot
import dev.pheby.protocol.PairCreate
import dev.pheby.protocol.PairCreated
import dev.pheby.protocol.Ping
import dev.pheby.protocol.Pong
import dev.pheby.protocol.PushList
import dev.pheby.protocol.PushSubscribe
import dev.pheby.protocol.PushSubscribed
import dev.pheby.protocol.PushSubscriptions
import dev.pheby.protocol.PushTest
import dev.pheby.protocol.PushTested
import dev.pheby.protocol.PushUnsubscribe
import dev.pheby.protocol.PushUnsubscribed
import dev.pheby.protocol.Ready
import dev.pheby.protocol.ReasoningChanged
import dev.pheby.protocol.ReasoningCurrent
import dev.pheby.protocol.ReasoningSet
import dev.pheby.protocol.ReasoningSnapshot
import dev.pheby.protocol.RunAccepted
import dev.pheby.protocol.RunCancel
import dev.pheby.protocol.RunFinished
import dev.pheby.protocol.RunQueued
import dev.pheby.protocol.ScheduleChanged
import dev.pheby.protocol.ScheduleCreate
import dev.pheby.protocol.ScheduleCreated
import dev.pheby.protocol.ScheduleDelete
import dev.pheby.protocol.ScheduleList
import dev.pheby.protocol.ScheduleSnapshot
import dev.pheby.protocol.ScheduleUpdate
import dev.pheby.protocol.ServerMessage
import dev.pheby.protocol.YoloChanged
import dev.pheby.protocol.YoloCurrent
import dev.pheby.protocol.YoloSet
import dev.pheby.protocol.YoloSnapshot
import kotlin.reflect.KClass

/**
 * The direct reply of each request (`error` is always possible too), as `REPLY_TYPES` of
 * `@pheby/protocol` says (a test compares them). `run.cancel` is answered by the run's single
 * `run.finished`, which carries the canceller's `request_id`.
 */
internal val REPLY_TYPES: Map<KClass<out ClientMessage>, KClass<out ServerMessage>> = mapOf(
    Hello::class to Ready::class,
    Ping::class to Pong::class,
    ConversationList::class to ConversationSnapshot::class,
    ConversationCreate::class to ConversationCreated::class,
    ConversationOpen::class to ConversationHistory::class,
    ConversationRename::class to ConversationRenamed::class,
    ConversationDelete::class to ConversationDeleted::class,
    ChatSend::class to RunAccepted::class,
    RunCancel::class to RunFinished::class,
    ApprovalRespond::class to ApprovalResolved::class,
    ClarifyRespond::class to ClarifyResolved::class,
    YoloCurrent::class to YoloSnapshot::class,
    YoloSet::class to YoloChanged::class,
    ModelsList::class to ModelsSnapshot::class,
    ModelsCurrent::class to ModelCurrent::class,
    ModelSet::class to ModelChanged::class,
    ReasoningCurrent::class to ReasoningSnapshot::class,
    ReasoningSet::class to ReasoningChanged::class,
    // Extensions: only sent on a connection that enabled the feature (else the server answers unknown_type).
    PushSubscribe::class to PushSubscribed::class,
    PushUnsubscribe::class to PushUnsubscribed::class,
    PushList::class to PushSubscriptions::class,
    PushTest::class to PushTested::class,
    ScheduleList::class to ScheduleSnapshot::class,
    ScheduleCreate::class to ScheduleCreated::class,
    ScheduleUpdate::class to ScheduleChanged::class,
    ScheduleDelete::class to ScheduleChanged::class,
    PairCreate::class to PairCreated::class,
    DeviceList::class to DeviceSnapshot::class,
    DeviceRevoke::class to DeviceRevoked::class,
)

/**
 * The other direct reply two requests may get when they use an extension field, as
 * `ALTERNATIVE_REPLY_TYPES` of `@pheby/protocol` says (a test compares them): `chat.send` with `queue`
 * (`run.queued` while a run is active) and `conversation.open` with `since_seq` (`conversation.resumed`).
 */
internal val ALTERNATIVE_REPLY_TYPES: Map<KClass<out ClientMessage>, KClass<out ServerMessage>> = mapOf(
    ChatSend::class to RunQueued::class,
    ConversationOpen::class to ConversationResumed::class,
)

/** The replies [message] may get (besides `error`), or null for a type the client does not know. */
internal fun repliesTo(message: ClientMessage): List<KClass<out ServerMessage>>? {
    val reply = REPLY_TYPES[message::class] ?: return null
    val alternative = when (message) {
        is ChatSend -> message.queue == true
        is ConversationOpen -> message.sinceSeq != null
        else -> false
    }
    return listOfNotNull(reply, ALTERNATIVE_REPLY_TYPES[message::class]?.takeIf { alternative })
}
