package dev.pheby.client

import dev.pheby.protocol.AgentStatus
import dev.pheby.protocol.ConversationUpdated
import dev.pheby.protocol.ModelChanged
import dev.pheby.protocol.OptionalNullable
import dev.pheby.protocol.SettingScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.flow.transformWhile
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test

/**
 * The `workspaces` extension against the real server configured the single-agent way (the simulator):
 * one agent `default` in one workspace `default`, conversations placed there and listed with their
 * placement, unknown IDs refused, the default agent's global model named on its change, and a client
 * without the feature that gets none of it. (A worktree is not asked for: this server's workspace is the
 * test's working directory, inside Pheby's own repository.) Skipped while the built server does not enable
 * `workspaces` (WorkspacesTest covers the client's side against a scripted server either way).
 */
class WorkspacesServerTest : ServerTest() {
    /** A second `workspaces` client, watching the broadcasts. */
    private val watcher = runBlocking { server.client() }

    /** A client that left `workspaces` out of its features. */
    private val plain = runBlocking { server.client { copy(features = features - Features.WORKSPACES) } }

    @AfterAll
    fun closeClients() {
        watcher.close()
        plain.close()
    }

    @BeforeEach
    fun served() = assumeTrue(Features.WORKSPACES in client.features, "the built pheby-server does not implement workspaces")

    @Test
    fun `the single-agent server has agent default in workspace default, and places and lists conversations there`() = blocking {
        val agents = client.listAgents().agents
        assertEquals(listOf("default"), agents.map { it.agentId })
        assertTrue(agents.single().status in AgentStatus.entries, "a status this client knows: ${agents.single().status}")
        val workspace = client.listWorkspaces().workspaces.single()
        assertEquals("default", workspace.workspaceId)
        assertEquals(listOf("default"), workspace.agents)

        val updated = async(start = CoroutineStart.UNDISPATCHED) { watcher.events.filterIsInstance<ConversationUpdated>().first { it.name == "Placed" } }
        val created = client.createConversation("Placed", agentId = "default", workspaceId = "default")
        assertEquals("default" to "default", created.agentId to created.workspaceId)
        assertEquals(OptionalNullable.Value(null), created.branch, "no worktree")
        val broadcast = updated.await()
        assertEquals(created.conversationId, broadcast.conversationId)
        assertEquals("default" to "default", broadcast.agentId to broadcast.workspaceId)
        assertEquals(OptionalNullable.Value(null), broadcast.branch)

        val unplaced = client.createConversation("Unplaced")
        assertEquals("default" to "default", unplaced.agentId to unplaced.workspaceId, "the default agent in the first workspace")

        val listed = client.listConversations(agentId = "default", workspaceId = "default").conversations
        val entry = listed.single { it.conversationId == created.conversationId }
        assertEquals("default" to "default", entry.agentId to entry.workspaceId)
        assertEquals(OptionalNullable.Value(null), entry.branch)
        assertTrue(listed.any { it.conversationId == unplaced.conversationId })
        assertEquals(emptyList<Any>(), client.listConversations(workspaceId = "nowhere").conversations, "an unknown ID lists nothing")

        assertTrue(expectPheby("bad_request") { client.createConversation("Nobody", agentId = "nobody") }.message!!.contains("agent_id"))
        assertTrue(expectPheby("bad_request") { client.createConversation("Nowhere", workspaceId = "nowhere") }.message!!.contains("workspace_id"))
        assertFalse(client.listConversations().conversations.any { it.name == "Nobody" || it.name == "Nowhere" }, "nothing created")
    }

    @Test
    fun `an agent comes up on first use - every workspaces client sees it starting, then ready`() = blocking {
        // A server of its own: this class's server has its agent up once any test ran.
        PhebyServer().start().use { fresh ->
            fresh.client().use { user ->
                fresh.client().use { other ->
                    val before = user.listAgents().agents
                    assertEquals(AgentStatus.IDLE, before.single().status, "spawned on first use, not at start")
                    val seen = async(start = CoroutineStart.UNDISPATCHED) {
                        other.agentChanges("default").transformWhile { emit(it); it.agent.status != AgentStatus.READY }.toList()
                    }
                    checkRun(user.chat(user.createConversation("First use").conversationId, "hello").toList())
                    val changes = seen.await()
                    assertEquals(listOf(AgentStatus.STARTING, AgentStatus.READY), changes.map { it.agent.status })
                    assertTrue(changes.all { it.requestId == null }, "events nobody asked for")
                    val after = user.listAgents().agents
                    assertEquals(after, changes.fold(before) { list, event -> list.withChange(event) }, "the events make the list")
                }
            }
        }
    }

    @Test
    fun `the default agent's global model is read and set by its ID, and its change names it`() = blocking {
        val list = client.listModels(agentId = "default")
        val (model, provider) = list.providers.flatMap { p -> p.models.map { it to p.slug } }.first { it.first != list.currentModel }
        assertEquals(SettingScope.GLOBAL, client.currentModel(agentId = "default").scope)

        val seen = async(start = CoroutineStart.UNDISPATCHED) { plain.events.filterIsInstance<ModelChanged>().first { it.model == model } }
        val changed = client.setModel(model, provider, agentId = "default")
        assertEquals(SettingScope.GLOBAL, changed.scope)
        assertEquals("default", changed.agentId)
        val v1 = seen.await()
        assertNull(v1.agentId, "a client without workspaces gets the default agent's change as v1's")

        expectPheby("bad_request") { client.listModels(agentId = "nobody") }
    }

    @Test
    fun `a client without workspaces gets no placement and unknown_type for its requests`() = blocking {
        assertFalse(Features.WORKSPACES in plain.features)
        val id = newConversation("Workspaces v1")
        val entry = plain.listConversations().conversations.single { it.conversationId == id }
        assertNull(entry.agentId)
        assertNull(entry.workspaceId)
        assertEquals(OptionalNullable.Absent, entry.branch)
        expectPheby("unknown_type") { plain.listAgents() }
        expectPheby("unknown_type") { plain.listWorkspaces() }
    }
}
