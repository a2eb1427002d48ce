package dev.pheby.client

// The `activity` extension (docs/protocol.md, "Extension: activity"): what the agent does, in detail.
// Asked for by default (as in @pheby/client). On an `activity` connection every `tool.event` may carry
// the call's `kind`, `title`, `locations` and `content` (diffs, text output, other blocks), an
// `approval.request` its `toolCallId` and `preview` (the content it asks about: an edit's diff, the
// command to run), and the conversation's plan and context usage arrive as `plan.updated` and
// `usage.updated`; `conversation.history` carries the same state. The fields are in the generated models;
// these are the request and the flows. Without the feature nothing of it arrives and `tool.get` is
// answered `unknown_type`.

import dev.pheby.protocol.PlanUpdated
import dev.pheby.protocol.ToolEvent
import dev.pheby.protocol.ToolGet
import dev.pheby.protocol.UsageUpdated
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.filterIsInstance

/**
 * `tool.get`: the latest state of tool call [toolCallId] of [conversationId], with every detail field,
 * for any call the conversation recorded (an older run's too). Throws [PhebyException]: `not_found` for a
 * call it does not know, `conversation_not_found`, and `unknown_type` without [Features.ACTIVITY].
 */
suspend fun PhebyClient.getTool(conversationId: String, toolCallId: String): ToolEvent =
    request(ToolGet(conversationId = conversationId, toolCallId = toolCallId))

/**
 * This event with the call's content as it stands: a `tool.event` that carries `content` carries the
 * whole current list (it replaces the previous one), and one without repeats nothing because nothing
 * changed, so the content of [previous] (the same call's last event, or null) still holds.
 */
fun ToolEvent.withContentOf(previous: ToolEvent?): ToolEvent =
    if (content != null || previous == null || previous.toolCallId != toolCallId) this else copy(content = previous.content)

/**
 * Every `plan.updated` from now on, of [conversationId] (null: of every conversation). Each one replaces
 * the conversation's plan (`entries`, each with its [dev.pheby.protocol.PlanEntryStatus] and priority).
 */
fun PhebyClient.planUpdates(conversationId: String? = null): Flow<PlanUpdated> =
    events.filterIsInstance<PlanUpdated>().filter { conversationId == null || it.conversationId == conversationId }

/**
 * Every `usage.updated` from now on, of [conversationId] (null: of every conversation): tokens `used` in
 * the agent's context of `size`, and the `cost` so far as the agent reports it (cumulative per agent
 * session: it starts again when the server replaces a lost session).
 */
fun PhebyClient.usageUpdates(conversationId: String? = null): Flow<UsageUpdated> =
    events.filterIsInstance<UsageUpdated>().filter { conversationId == null || it.conversationId == conversationId }
