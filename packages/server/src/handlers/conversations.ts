import {
  type ConversationSummary,
  FEATURE_ACTIVITY,
  FEATURE_INBOX,
  FEATURE_MODES,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  FEATURE_THOUGHTS,
  LIMITS,
  type ServerMessageOf,
} from "@pheby/protocol";
import { readyCapabilities } from "../agent/capabilities.js";
import type { AgentSpec } from "../agents/config.js";
import { FEATURE_WORKSPACES, placementFields, withPlacement } from "../agents/fields.js";
import { placeConversation } from "../agents/placement.js";
import { readerOf } from "../auth/principal.js";
import { ProtocolError } from "../errors.js";
import { eventOf } from "../outbox/outbox.js";
import type { ConversationFilter, ConversationRow } from "../store/store.js";
import { newId } from "../util/ids.js";
import { iso } from "../util/time.js";
import { type HandlerTable, requireConversation, type ServerContext } from "./context.js";
import { once } from "./idempotent.js";
import { type WorkspacesRequestFields, workdirFor, workspacesFields } from "./placement.js";

/** Name of a conversation created without one. */
export const DEFAULT_NAME = "New chat";

function summary(row: ConversationRow): ConversationSummary {
  return {
    conversation_id: row.id,
    name: row.name,
    session_id: row.session_id,
    last_active: row.last_active === null ? null : iso(row.last_active),
    source: row.source,
  };
}

/**
 * Import agent sessions the store has never seen ("sessions started elsewhere"): from the default
 * agent (brought up as before) and from every other agent already running, never starting one.
 * Each agent lists the sessions of each workspace it is allowed in (ACP `session/list`'s `cwd`),
 * which become conversations of that agent and workspace.
 */
async function importAgentSessions(ctx: ServerContext): Promise<void> {
  const { agents } = ctx;
  const running = agents.agents().filter((a) => a === agents.defaultAgent || agents.status(a.id) === "ready");
  await Promise.all(running.map((agent) => importSessionsOf(ctx, agent)));
}

async function importSessionsOf(ctx: ServerContext, agent: AgentSpec): Promise<void> {
  const { store, log } = ctx;
  const { backend } = agent;
  if (!backend.listSessions) return;
  ctx.agents.use({ agentId: agent.id }); // listing brings the default agent up, as before
  try {
    if (!(await readyCapabilities(backend)).listSessions) return;
    const known = store.knownSessionIds(agent.id);
    for (const workspace of ctx.agents.workspaces()) {
      if (!workspace.agents.includes(agent.id)) continue;
      for (const session of await backend.listSessions({ cwd: workspace.path })) {
        if (known.has(session.sessionId)) continue;
        known.add(session.sessionId);
        const updated = session.updatedAt ? Date.parse(session.updatedAt) : Number.NaN;
        store.createConversation({
          id: newId(),
          name: session.title?.trim() || DEFAULT_NAME,
          session_id: session.sessionId,
          source: backend.name,
          created_at: Number.isNaN(updated) ? ctx.clock.now() : updated,
          agent_id: agent.id,
          workspace_id: workspace.id,
        });
      }
    }
  } catch (err) {
    log.warn({ err, agent: agent.id }, "could not list agent sessions; serving the stored index");
  }
}

/** A conversation entry as `features` sees it: with `workspaces`, its agent, workspace and branch. */
function entry(row: ConversationRow, features: ReadonlySet<string>) {
  return features.has(FEATURE_WORKSPACES) ? { ...summary(row), ...placementFields(row) } : summary(row);
}

/** `conversation.list`'s filters (`workspaces`); an unknown id lists nothing (docs/protocol.md). */
function listFilter(fields: WorkspacesRequestFields): ConversationFilter {
  return {
    ...(fields.agent_id === undefined ? {} : { agentId: fields.agent_id }),
    ...(fields.workspace_id === undefined ? {} : { workspaceId: fields.workspace_id }),
  };
}

/** `message_id` "m<row id>" of this conversation, or `bad_request`. */
function parseCursor(ctx: ServerContext, conversationId: string, cursor: string): number {
  const match = /^m([1-9]\d{0,15})$/.exec(cursor);
  const id = match ? Number(match[1]) : Number.NaN;
  if (!Number.isSafeInteger(id) || !ctx.store.hasMessage(conversationId, id)) {
    throw new ProtocolError("bad_request", "before_message_id is not a message of this conversation");
  }
  return id;
}

/**
 * A `conversation.history` page as `features` sees it: with `resume`, each user message's
 * `client_message_id` and the conversation's `seq` (and `resumed: false` when a `since_seq` reached
 * back too far); with `queue`, its queued follow-ups; with `expiry`, the questions' `expires_at`;
 * with `activity`, the tools' detail, the approvals' call and preview, and the plan and usage; with
 * `thoughts`, the active run's thoughts; with `modes`, the conversation's mode.
 */
function historyPage(
  ctx: ServerContext,
  features: ReadonlySet<string>,
  id: string,
  opts: { pageSize: number; before: number | undefined; since_seq: number | undefined },
): ServerMessageOf<"conversation.history"> {
  const log = features.has(FEATURE_RESUME) ? ctx.resume : undefined;
  const page = ctx.store.messagePage(id, opts.pageSize, opts.before, ctx.historyPageBytes);
  return {
    type: "conversation.history",
    conversation_id: id,
    messages: page.rows.map((m) => ({
      message_id: `m${m.id}`,
      role: m.role,
      text: m.text,
      ts: m.ts === null ? null : iso(m.ts),
      ...(log && m.client_message_id !== null ? { client_message_id: m.client_message_id } : {}),
    })),
    has_more: page.hasMore,
    attachments: ctx.attachments.list(id),
    run: ctx.runs.state(id),
    tools: ctx.runs.tools(id, features.has(FEATURE_ACTIVITY)),
    approvals: ctx.decisions.approvals(id, features),
    clarifications: ctx.decisions.clarifications(id, features),
    ...(log ? { seq: log.position(id) } : {}),
    ...(log && opts.since_seq !== undefined ? { resumed: false as const } : {}),
    ...(features.has(FEATURE_QUEUE) ? { queue: ctx.queue.list(id, features) } : {}),
    ...(features.has(FEATURE_ACTIVITY)
      ? { plan: ctx.activity.latestPlan(id), usage: ctx.activity.latestUsage(id) }
      : {}),
    ...(features.has(FEATURE_THOUGHTS) ? { thoughts: ctx.runs.thoughts(id) } : {}),
    ...(features.has(FEATURE_MODES) ? { mode_id: ctx.modes.current(id) } : {}),
  };
}

/** conversation.list / create / open / rename / delete. */
export const conversationHandlers: HandlerTable = {
  "conversation.list": async (ctx, req) => {
    const { features } = req.peer;
    const filter = listFilter(workspacesFields(req.peer, req.msg));
    await importAgentSessions(ctx);
    const rows = ctx.store.listConversations(filter);
    const reader = readerOf(req.peer.principal);
    // inbox: unarchived conversations (archived ones with archived: true), each with its list state.
    if (!features.has(FEATURE_INBOX) || reader === null) {
      return {
        rule: "requester",
        reply: { type: "conversation.snapshot", conversations: rows.map((row) => entry(row, features)) },
      };
    }
    const archived = req.msg.archived === true;
    const conversations = rows
      .filter((row) => (row.archived === 1) === archived)
      .map((row) => ({ ...entry(row, features), ...ctx.inbox.fields(row, reader) }));
    return { rule: "requester", reply: { type: "conversation.snapshot", conversations } };
  },

  "conversation.create": (ctx, req) => {
    const { client_message_id } = req.msg;
    // Scoped to the server: a retry finds the conversation its first try created.
    const key =
      client_message_id === undefined
        ? undefined
        : { kind: "conversation.create" as const, scope: "", clientMessageId: client_message_id };
    return once(ctx, req.peer, key, async () => {
      // Placed (and refused) before anything is created.
      const placed = placeConversation(ctx.agents, workspacesFields(req.peer, req.msg));
      const id = newId();
      const name = req.msg.name?.trim() || DEFAULT_NAME;
      const { workdir, branch } = await workdirFor(ctx, placed, id);
      const backend = ctx.agents.use({ agentId: placed.agent.id });
      const cwd = workdir ?? placed.workspace.path;
      const { sessionId } = await backend.createSession(id, { cwd });
      ctx.store.createConversation({
        id,
        name,
        session_id: sessionId,
        source: backend.name,
        created_at: ctx.clock.now(),
        agent_id: placed.agent.id,
        workspace_id: placed.workspace.id,
        workdir,
        branch,
      });
      ctx.history.authoritative(id);
      // `changes`: HEAD now is what the conversation's changes are measured against.
      await ctx.changes.recordBase(id);
      // What the agent said of the new session before it had a conversation (modes, commands).
      const conv = ctx.store.getConversation(id);
      if (conv) ctx.modes.catchUp(conv, false);
      const created = { type: "conversation.created", conversation_id: id, name } as const;
      return {
        reply: created,
        answer: {
          rule: "requester",
          reply: created,
          broadcast: withPlacement(
            eventOf({ type: "conversation.updated", conversation_id: id, name }),
            conv,
          ),
        },
      };
    });
  },

  "conversation.open": async (ctx, req) => {
    const { conversation_id: id, limit = LIMITS.historyPageDefault, before_message_id, since_seq } = req.msg;
    const pageSize = Math.min(limit, LIMITS.historyPage); // the spec caps a larger limit, it does not reject it
    await ctx.history.refresh(requireConversation(ctx, id));
    // A snapshot: read when it is sent, so what the reply accounts for, its seq and the live events
    // after it line up (no event published in between can overtake a reply that lacks it).
    return () => {
      requireConversation(ctx, id); // it may have been deleted while the agent replayed
      const { features } = req.peer;
      // Only a resume peer sends since_seq (the decoder drops it for others), and only where it is offered.
      const log = features.has(FEATURE_RESUME) ? ctx.resume : undefined;
      if (log && since_seq !== undefined) {
        const window = log.after(id, since_seq);
        if (window.complete) {
          return {
            rule: "requester",
            reply: {
              type: "conversation.resumed",
              conversation_id: id,
              from_seq: since_seq,
              to_seq: window.lastSeq,
            },
            replay: log.replayed(id, window),
          };
        }
      }
      const before = before_message_id === undefined ? undefined : parseCursor(ctx, id, before_message_id);
      return {
        rule: "requester",
        reply: historyPage(ctx, req.peer.features, id, { pageSize, before, since_seq }),
      };
    };
  },

  "conversation.rename": (ctx, req) => {
    const { conversation_id: id } = req.msg;
    requireConversation(ctx, id);
    const name = req.msg.name.trim();
    ctx.store.renameConversation(id, name, true);
    const renamed = { type: "conversation.renamed", conversation_id: id, name } as const;
    return { rule: "requester", reply: renamed, broadcast: eventOf(renamed) };
  },

  "conversation.delete": async (ctx, req) => {
    const { conversation_id: id } = req.msg;
    const conv = requireConversation(ctx, id);
    // Its queue goes first, so that ending its active run starts nothing.
    ctx.queue.drop(id);
    // An active run is cancelled first: its single run.finished (cancelled) precedes the deletion.
    await ctx.runs.cancelAndWait(id);
    if (!ctx.store.getConversation(id))
      throw new ProtocolError("conversation_not_found", "Conversation not found");
    const backend = ctx.agents.use(conv);
    if (conv.session_id && backend.deleteSession) {
      try {
        if ((await readyCapabilities(backend)).deleteSession) await backend.deleteSession(conv.session_id);
      } catch (err) {
        ctx.log.warn({ err, conversation: id }, "agent could not delete the session; tombstoned anyway");
      }
    }
    // Its schedules go with it (each a schedule.changed, deleted: true).
    ctx.scheduler.deleteForConversation(id);
    ctx.store.deleteConversation(id, ctx.clock.now());
    ctx.inbox.forget(id);
    const deleted = { type: "conversation.deleted", conversation_id: id } as const;
    return { rule: "requester", reply: deleted, broadcast: eventOf(deleted) };
  },
};
