import type { ServerMessage, ServerMessageOf } from "@pheby/protocol";
import { FEATURE_WORKSPACES } from "../agents/fields.js";
import { eventOf, type OutboxEvent, type Peer } from "../outbox/outbox.js";
import { iso } from "../util/time.js";
import {
  type HandlerTable,
  type RequesterAnswer,
  requireConversation,
  type ServerContext,
} from "./context.js";
import { settingsAgent } from "./placement.js";

/** `conversation_id` when the scope is a conversation (so a broadcast says which one changed). */
function scoped(scope: "conversation" | "global", conversationId: string | undefined) {
  return scope === "conversation" && conversationId !== undefined ? { conversation_id: conversationId } : {};
}

/**
 * A `*.changed` as the reply and the broadcast. A global change carries its agent's `agent_id` on
 * `workspaces` connections; one of a non-default agent goes only to them (v1 connections know one
 * agent's settings, the default's).
 */
function changedAnswer(
  ctx: ServerContext,
  peer: Peer,
  changed: ServerMessageOf<"model.changed"> | ServerMessageOf<"reasoning.changed">,
  agentId: string,
): RequesterAnswer {
  if (changed.scope !== "global") return { rule: "requester", reply: changed, broadcast: eventOf(changed) };
  const fields = { [FEATURE_WORKSPACES]: { agent_id: agentId } };
  const ofDefault = agentId === ctx.agents.defaultAgent.id;
  const broadcast: OutboxEvent = {
    ...eventOf(changed),
    fields,
    ...(ofDefault ? {} : { feature: FEATURE_WORKSPACES }),
  };
  const reply = peer.features.has(FEATURE_WORKSPACES) ? { ...changed, agent_id: agentId } : changed;
  return { rule: "requester", reply: reply as ServerMessage, broadcast };
}

/** The optional conversation of a settings request must exist. */
function checkConversation(ctx: ServerContext, conversationId: string | undefined): void {
  if (conversationId !== undefined) requireConversation(ctx, conversationId);
}

/**
 * models.list / models.current / model.set and reasoning.current /
 * reasoning.set. Everything named comes from the backend's catalogue; a
 * backend without the capability gets `not_implemented`. A `*.set` replies
 * `*.changed` with the request_id and broadcasts the same event without it.
 */
export const modelHandlers: HandlerTable = {
  "models.list": async (ctx, req) => {
    const agentId = settingsAgent(ctx, req.peer, req.msg);
    const { catalogue, capabilities } = await ctx.settings.catalogue("models", agentId);
    const id = req.msg.conversation_id;
    checkConversation(ctx, id);
    const current = ctx.settings.model(catalogue, id, agentId);
    return {
      rule: "requester",
      reply: {
        type: "models.snapshot",
        providers: catalogue.providers.map((p) => ({
          slug: p.slug,
          name: p.name,
          is_current: p.slug === current.provider,
          models: p.models,
          total_models: p.models.length,
        })),
        current_model: current.model,
        current_provider: current.provider,
        scope: current.scope,
        // The levels, as the spec's example lists them: `none` is not a level but "thinking off"
        // (reasoning.set still accepts it; reasoning.snapshot lists it, as its own example does).
        supported_reasoning_efforts: capabilities.reasoning
          ? ctx.settings.efforts(catalogue, current.model).filter((e) => e !== "none")
          : [],
        ts: iso(ctx.clock.now()),
      },
    };
  },

  "models.current": async (ctx, req) => {
    const agentId = settingsAgent(ctx, req.peer, req.msg);
    const { catalogue } = await ctx.settings.catalogue("models", agentId);
    const id = req.msg.conversation_id;
    checkConversation(ctx, id);
    const { model, provider, scope } = ctx.settings.model(catalogue, id, agentId);
    return {
      rule: "requester",
      reply: {
        type: "model.current",
        model,
        provider,
        scope,
        ...scoped(scope, id),
        ts: iso(ctx.clock.now()),
      },
    };
  },

  "model.set": async (ctx, req) => {
    const agentId = settingsAgent(ctx, req.peer, req.msg);
    const { catalogue } = await ctx.settings.catalogue("models", agentId);
    const id = req.msg.conversation_id;
    checkConversation(ctx, id);
    const set = ctx.settings.setModel(catalogue, id, req.msg.model, req.msg.provider, agentId);
    const scope = id === undefined ? "global" : "conversation";
    const changed = { type: "model.changed", ...set, scope, ...scoped(scope, id) } as const;
    return changedAnswer(ctx, req.peer, changed, agentId);
  },

  "reasoning.current": async (ctx, req) => {
    const agentId = settingsAgent(ctx, req.peer, req.msg);
    const { catalogue } = await ctx.settings.catalogue("reasoning", agentId);
    const id = req.msg.conversation_id;
    checkConversation(ctx, id);
    const { effort, scope } = ctx.settings.effort(catalogue, id, agentId);
    // The efforts of the model this scope runs on (OpenCode's differ per model).
    const { model } = ctx.settings.model(catalogue, id, agentId);
    return {
      rule: "requester",
      reply: {
        type: "reasoning.snapshot",
        effort,
        enabled: effort !== "none",
        scope,
        ...scoped(scope, id),
        supported_efforts: ctx.settings.efforts(catalogue, model),
        ts: iso(ctx.clock.now()),
      },
    };
  },

  "reasoning.set": async (ctx, req) => {
    const agentId = settingsAgent(ctx, req.peer, req.msg);
    const { catalogue } = await ctx.settings.catalogue("reasoning", agentId);
    const { effort, conversation_id: id } = req.msg;
    checkConversation(ctx, id);
    ctx.settings.setEffort(catalogue, id, effort, agentId);
    const scope = id === undefined ? "global" : "conversation";
    const changed = { type: "reasoning.changed", effort, scope, ...scoped(scope, id) } as const;
    return changedAnswer(ctx, req.peer, changed, agentId);
  },
};
