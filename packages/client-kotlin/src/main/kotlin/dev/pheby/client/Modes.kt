package dev.pheby.client

// The `modes` extension (docs/protocol.md, "Extension: modes and commands"): the modes the agent can
// work in (plan, default, auto-edit…) and the slash commands it accepts. Asked for by default (as in
// @pheby/client). A mode is the conversation's: chosen here or on another device, or changed by the
// agent itself, it arrives as `mode.changed` on PhebyClient.events; a new command list arrives as
// `commands.snapshot` without `request_id`. A command runs as an ordinary message whose text starts with
// `/name` ([slashCommand]). Without the feature the server answers these requests `unknown_type`.

import dev.pheby.protocol.CommandsList
import dev.pheby.protocol.CommandsSnapshot
import dev.pheby.protocol.ModeChanged
import dev.pheby.protocol.ModeSet
import dev.pheby.protocol.ModesList
import dev.pheby.protocol.ModesSnapshot
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.filterIsInstance

/**
 * `modes.list`: the modes the agent of [conversationId] offers (`modeId`, `name`, `description`, and
 * `autoApproves`: the agent runs tools in it without asking) and the conversation's `currentModeId`
 * (null when unknown). Answered from what the server last heard from the agent when its session is not
 * open: it never starts an agent. An agent without modes: an empty list.
 */
suspend fun PhebyClient.listModes(conversationId: String): ModesSnapshot = request(ModesList(conversationId = conversationId))

/**
 * `mode.set`: puts the conversation in mode [modeId] (at once when its session is open, else at its next
 * turn) and keeps it as the conversation's choice, also after the agent restarts. Returns `mode.changed`;
 * every other `modes` client gets the same event without `requestId`. Choosing the agent's YOLO-like mode
 * is `yolo.set true`, and another mode while YOLO is on turns YOLO off (both also send `yolo.changed`).
 * Throws [PhebyException]: `bad_request` for a mode the agent does not offer or one it refused (with the
 * agent's words), `conversation_not_found`, and `unknown_type` without [Features.MODES].
 */
suspend fun PhebyClient.setMode(conversationId: String, modeId: String): ModeChanged =
    request(ModeSet(conversationId = conversationId, modeId = modeId))

/**
 * `commands.list`: the slash commands the agent of [conversationId] accepts (`name`, `description`, and
 * `hint`, the agent's hint for the input after the name, or null), as last announced; it never starts an
 * agent. Run one with `sendMessage(id, slashCommand(name, input))`.
 */
suspend fun PhebyClient.listCommands(conversationId: String): CommandsSnapshot =
    request(CommandsList(conversationId = conversationId))

/**
 * Every `mode.changed` from now on, of [conversationId] (null: of every conversation): chosen by this or
 * another client, or by the agent itself (e.g. leaving plan mode once the plan was accepted). Each one is
 * the conversation's mode from then on.
 */
fun PhebyClient.modeChanges(conversationId: String? = null): Flow<ModeChanged> =
    events.filterIsInstance<ModeChanged>().filter { conversationId == null || it.conversationId == conversationId }

/**
 * Every `commands.snapshot` from now on, of [conversationId] (null: of every conversation): the replies
 * to [listCommands] and the lists the agent announces by itself (often right after its session starts,
 * outside any run). Each one replaces the conversation's command list.
 */
fun PhebyClient.commandUpdates(conversationId: String? = null): Flow<CommandsSnapshot> =
    events.filterIsInstance<CommandsSnapshot>().filter { conversationId == null || it.conversationId == conversationId }

/**
 * The text of a message that runs the agent's command [name] (ACP's convention: `/name`, then [input]
 * after a space). Send it like any message (`sendMessage`, `chat`): it follows the one-run rule, and a
 * client without `modes` can send it too. A leading `/` of [name] is not doubled.
 */
fun slashCommand(name: String, input: String? = null): String {
    val command = "/" + name.removePrefix("/")
    return if (input.isNullOrBlank()) command else "$command $input"
}
