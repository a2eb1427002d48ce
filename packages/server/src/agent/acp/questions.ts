/**
 * Questions from the agent, agent → client requests: `session/request_permission`
 * becomes an approval and `elicitation/create` (form mode) a clarification,
 * asked through the running turn's sink and withdrawn with it.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { nearestChoice } from "../nearest.js";
import { mapElicitationForm } from "./elicitation.js";
import { HERMES_APPROVAL_EXPIRES_MS, isHermes } from "./hermes.js";
import { phebyToolOf } from "./mcp.js";
import { mapPermissionOptions } from "./permissions.js";
import { type AcpState, drain } from "./state.js";

const CANCELLED: acp.RequestPermissionResponse = { outcome: { outcome: "cancelled" } };

export async function permission(
  state: AcpState,
  params: acp.RequestPermissionRequest,
  signal: AbortSignal,
): Promise<acp.RequestPermissionResponse> {
  const session = state.sessions.get(params.sessionId);
  if (!session?.turn) return CANCELLED;
  await drain(session); // the tool call it is about is shown first
  const turn = session.turn;
  const { choices, optionFor } = mapPermissionOptions(params.options);
  if (!turn || choices.length === 0) return CANCELLED;
  const call = params.toolCall;
  // Pheby's own tools act only inside Pheby (the user answers ask_user on the phone anyway):
  // an agent asking leave to call them (Qwen Code, Claude Code) gets it without a question.
  const own = state.host.tools ? phebyToolOf(call, state.host.tools.names) : null;
  if (own && choices.includes("once")) {
    const args = call.rawInput && typeof call.rawInput === "object" ? call.rawInput : undefined;
    turn.notePhebyCall(own, args as Record<string, unknown> | undefined);
    state.host.log.debug({ tool: own }, "permission for Pheby's own tool granted");
    return { outcome: { outcome: "selected", optionId: optionFor.get("once")! } };
  }
  const input = (call.rawInput ?? {}) as { command?: unknown; description?: unknown };
  const preview = await turn.preview(call);
  const answer = await turn.ask(signal, (withdraw) =>
    turn.sink.askPermission(
      {
        toolCallId: call.toolCallId,
        // Every client sees these (v1 fields): no server path in them ("Write /srv/work/a.txt").
        command: turn.scrubValue(
          typeof input.command === "string" ? input.command : (call.title ?? call.toolCallId),
        ) as string,
        description: turn.scrubValue(
          typeof input.description === "string" ? input.description : (call.title ?? call.kind ?? ""),
        ) as string,
        choices,
        ...(preview.length > 0 ? { preview } : {}),
        // Hermes denies by itself after 60 s, without telling us: the phone should know.
        ...(isHermes(state.init) ? { expiresInMs: HERMES_APPROVAL_EXPIRES_MS } : {}),
      },
      withdraw,
    ),
  );
  // The user may pick a choice the agent does not offer: apply the nearest one it does.
  const applied = answer.outcome === "selected" ? nearestChoice(answer.choice, choices) : undefined;
  const optionId = applied && optionFor.get(applied);
  return optionId ? { outcome: { outcome: "selected", optionId } } : CANCELLED;
}

export async function elicitation(
  state: AcpState,
  params: acp.CreateElicitationRequest,
  signal: AbortSignal,
): Promise<acp.CreateElicitationResponse> {
  const sessionId =
    "sessionId" in params && typeof params.sessionId === "string" ? params.sessionId : undefined;
  const session = sessionId ? state.sessions.get(sessionId) : undefined;
  const schema = "requestedSchema" in params ? (params.requestedSchema as acp.ElicitationSchema) : null;
  const form = params.mode === "form" && schema ? mapElicitationForm(params.message, schema) : null;
  if (!session?.turn || !form) return { action: "decline" };
  await drain(session);
  const turn = session.turn;
  if (!turn) return { action: "cancel" };
  const answer = await turn.ask(signal, (withdraw) => turn.sink.askClarification(form.question, withdraw));
  return form.toResponse(answer);
}
