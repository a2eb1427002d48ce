package dev.pheby.client

import dev.pheby.protocol.Agent
import dev.pheby.protocol.AgentStatus
import dev.pheby.protocol.AgentsChanged
import dev.pheby.protocol.ConversationUpdated
import dev.pheby.protocol.ModelChanged
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.ReasoningChanged
import dev.pheby.protocol.ReasoningEffort
import dev.pheby.protocol.SettingScope
import dev.pheby.protocol.decodeServerMessage
import dev.pheby.protocol.toJson
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The `workspaces` extension: the frames the client sends for each call are `@pheby/protocol`'s fixtures
 * (the shape the server's schemas accept), and the fixtures' replies and events reach the app typed. A
 * scripted WebSocket peer on 127.0.0.1 plays the server (pheby-server's multi-agent core is not on this
 * branch), so what is asserted is the client's side of the wire: what it sends, never what a server does.
 */
class WorkspacesTest : ScriptedTest() {
    @Test
    fun `agents and workspaces are listed, and agents_changed updates an agent of the list`() = blocking {
        val (client, peer) = connected(listOf("delta.append", "resume", "workspaces"))
        client.use {
            assertTrue(Features.WORKSPACES in client.features)
            val agents = async { client.listAgents() }
            val listRequest = peer.answer("agents.list", fixtureObject("valid/server/agents.snapshot.json"))
            assertSent("valid/client/agents.list.json", listRequest)
            val snapshot = agents.await()
            assertEquals(reply("valid/server/agents.snapshot.json", listRequest), snapshot)
            assertEquals(listOf("claude", "hermes"), snapshot.agents.map { it.agentId })
            assertEquals(listOf(AgentStatus.READY, AgentStatus.IDLE), snapshot.agents.map { it.status })

            val workspaces = async { client.listWorkspaces() }
            val workspacesRequest = peer.answer("workspaces.list", fixtureObject("valid/server/workspaces.snapshot.json"))
            assertSent("valid/client/workspaces.list.json", workspacesRequest)
            val site = workspaces.await().workspaces.first()
            assertEquals("site", site.workspaceId)
            assertEquals("Website", site.name)
            assertEquals(listOf("claude", "hermes"), site.agents)
            assertTrue(site.git)

            // Another agent's change first: the flow of hermes skips it; every agent's flow has both.
            val hermes = async(start = CoroutineStart.UNDISPATCHED) { client.agentChanges("hermes").first() }
            val every = async(start = CoroutineStart.UNDISPATCHED) { client.agentChanges().take(2).toList() }
            val claudeFailed = AgentsChanged(agent = Agent(agentId = "claude", name = "Claude Code", status = AgentStatus.FAILED))
            peer.send(claudeFailed.toJson())
            peer.send(fixture("valid/server/agents.changed.json"))
            val starting = hermes.await()
            assertEquals(decodeServerMessage(fixture("valid/server/agents.changed.json")), starting)
            assertNull(starting.requestId, "an event nobody asked for")
            assertEquals(listOf(claudeFailed, starting), every.await())

            val updated = snapshot.agents.withChange(starting).withChange(claudeFailed)
            assertEquals(listOf(AgentStatus.FAILED, AgentStatus.STARTING), updated.map { it.status }, "in place, in the list's order")
            val added = AgentsChanged(agent = Agent(agentId = "codex", name = "Codex", status = AgentStatus.of("sleeping")))
            assertEquals(listOf("claude", "hermes", "codex"), updated.withChange(added).map { it.agentId }, "a new agent is appended")
            assertEquals("sleeping", updated.withChange(added).last().status.value, "a newer server's status is kept")
        }
    }

    @Test
    fun `a new conversation names its agent, workspace and worktree, the list filters by them, and entries carry them`() = blocking {
        val (client, peer) = connected(listOf("delta.append", "resume", "workspaces"))
        client.use {
            val created = async { client.createConversation("Fix the footer", agentId = "claude", workspaceId = "site", worktree = true) }
            val create = peer.answer("conversation.create", fixtureObject("valid/server/conversation.created.workspaces.json"))
            assertSent("valid/client/conversation.create.workspaces.json", create, "client_message_id")
            assertTrue("client_message_id" in create, "resume: a retry never creates a second one")
            val conversation = created.await()
            assertEquals(reply("valid/server/conversation.created.workspaces.json", create), conversation)
            assertEquals("claude", conversation.agentId)
            assertEquals("site", conversation.workspaceId)
            assertEquals(OptionalNullable.Value("pheby/a1b2c3d4"), conversation.branch)

            // Without a choice the request is v1's: the server picks the default agent and workspace.
            val plain = async { client.createConversation("Plain") }
            val v1 = peer.answer("conversation.create", fixtureObject("valid/server/conversation.created.json"))
            assertEquals(setOf("type", "request_id", "name", "client_message_id"), v1.keys)
            plain.await()

            val listed = async { client.listConversations(agentId = "claude", workspaceId = "site") }
            val list = peer.answer("conversation.list", fixtureObject("valid/server/conversation.snapshot.workspaces.json"))
            assertSent("valid/client/conversation.list.workspaces.json", list)
            val entries = listed.await().conversations
            assertEquals(listOf("claude", "claude"), entries.map { it.agentId })
            assertEquals(listOf("site", "site"), entries.map { it.workspaceId })
            assertEquals(listOf(OptionalNullable.Value("pheby/a1b2c3d4"), OptionalNullable.Value(null)), entries.map { it.branch }, "null: no worktree")

            val every = async { client.listConversations() }
            assertEquals(setOf("type", "request_id"), peer.answer("conversation.list", fixtureObject("valid/server/conversation.snapshot.json")).keys)
            val v1Entry = every.await().conversations.first()
            assertNull(v1Entry.agentId, "absent without the feature")
            assertEquals(OptionalNullable.Absent, v1Entry.branch)

            val update = async(start = CoroutineStart.UNDISPATCHED) { client.events.filterIsInstance<ConversationUpdated>().first() }
            peer.send(fixture("valid/server/conversation.updated.workspaces.json"))
            assertEquals("hermes", update.await().agentId)
            assertEquals(OptionalNullable.Value(null), update.await().branch)
        }
    }

    @Test
    fun `the global model and reasoning calls name their agent, and without one stay v1's`() = blocking {
        val (client, peer) = connected(listOf("delta.append", "resume", "workspaces"))
        client.use {
            val models = async { client.listModels(agentId = "hermes") }
            assertSent("valid/client/models.list.agent.json", peer.answer("models.list", fixtureObject("valid/server/models.snapshot.json")))
            models.await()

            val current = async { client.currentModel(agentId = "hermes") }
            assertSent("valid/client/models.current.agent.json", peer.answer("models.current", fixtureObject("valid/server/model.current.global.json")))
            current.await()

            val set = async { client.setModel("anthropic/claude-sonnet-4", "anthropic", agentId = "hermes") }
            val setRequest = peer.answer("model.set", fixtureObject("valid/server/model.changed.agent.json"))
            assertSent("valid/client/model.set.agent.json", setRequest)
            val changed: ModelChanged = set.await()
            assertEquals("hermes", changed.agentId)
            assertEquals(SettingScope.GLOBAL, changed.scope)

            val reasoning = async { client.currentReasoning(agentId = "hermes") }
            assertSent("valid/client/reasoning.current.agent.json", peer.answer("reasoning.current", fixtureObject("valid/server/reasoning.snapshot.default.json")))
            reasoning.await()

            val effort = async { client.setReasoning(ReasoningEffort.HIGH, agentId = "hermes") }
            assertSent("valid/client/reasoning.set.agent.json", peer.answer("reasoning.set", fixtureObject("valid/server/reasoning.changed.agent.json")))
            val effortChanged: ReasoningChanged = effort.await()
            assertEquals("hermes", effortChanged.agentId)

            // The default agent: no agent_id, the request v1 sends.
            val defaultAgent = async { client.setModel("z-ai/glm-5.3-flash") }
            assertFalse("agent_id" in peer.answer("model.set", fixtureObject("valid/server/model.changed.global.json")))
            assertNull(defaultAgent.await().agentId)
        }
    }

    @Test
    fun `a server without workspaces answers its requests unknown_type`() = blocking {
        val (client, peer) = connected(listOf("delta.append"))
        client.use {
            assertFalse(Features.WORKSPACES in client.features, "asked for, not enabled")
            val agents = async { runCatching { client.listAgents() }.exceptionOrNull() }
            peer.refuse("agents.list", "unknown_type", "Unknown message type: agents.list")
            assertEquals("unknown_type", (agents.await() as PhebyException).code)
        }
    }
}
