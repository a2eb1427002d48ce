import type { PhebyClient } from "@pheby/client";
import { FEATURE_WORKSPACES, REASONING_EFFORTS, type ReasoningEffort } from "@pheby/protocol";
import { type Command, EXIT, type Flags, required } from "../command.js";
import { UsageError } from "../exit.js";
import { requireFeature } from "../features.js";
import { writeJson, writeLine } from "../io.js";
import { resolveConversation } from "../resolve.js";

const scopeOptions = {
  conversation: { type: "string", short: "c" },
  agent: { type: "string" },
} as const;
const scopeHelp = [
  "  -c, --conversation C  the conversation's override (without it: the global default)",
  "  --agent ID            the global default of that agent (workspaces extension; default: the default agent)",
];

/** The wire scope of a settings request: `--conversation` (an ID or a name) and, with `workspaces`, `--agent`. */
async function scopeOf(
  client: PhebyClient,
  flags: Flags,
): Promise<{ conversation_id?: string; agent_id?: string }> {
  const conversation = typeof flags.conversation === "string" ? flags.conversation : undefined;
  const agent = typeof flags.agent === "string" ? flags.agent : undefined;
  // Without the extension the server would ignore --agent and answer for the default agent.
  if (agent !== undefined) requireFeature(client, FEATURE_WORKSPACES, "--agent");
  return {
    ...(conversation === undefined
      ? {}
      : { conversation_id: await resolveConversation(client, conversation) }),
    ...(agent === undefined ? {} : { agent_id: agent }),
  };
}

export const models: Command = {
  name: "models",
  usage: "[--conversation C | --agent ID]",
  summary: "List providers and models; * marks the current one (for a conversation with --conversation).",
  details: scopeHelp,
  options: scopeOptions,
  examples: ["pheby models", "pheby models --conversation 9f1c0e7a2b3d4c5e6f708192a3b4c5d6 --json"],
  async run({ flags, io, connect }) {
    const client = await connect();
    const snapshot = await client.request({ type: "models.list", ...(await scopeOf(client, flags)) });
    if (flags.json === true) {
      const { type: _t, request_id: _r, ...rest } = snapshot;
      writeJson(io, rest);
      return EXIT.ok;
    }
    for (const p of snapshot.providers) {
      writeLine(
        io,
        `${p.name} (${p.slug})${p.total_models > p.models.length ? `, ${p.models.length} of ${p.total_models}` : ""}`,
      );
      for (const m of p.models) {
        const current = m === snapshot.current_model && p.slug === (snapshot.current_provider ?? p.slug);
        writeLine(io, `  ${current ? "*" : " "} ${m}`);
      }
    }
    writeLine(io, `reasoning efforts: ${snapshot.supported_reasoning_efforts.join(", ")}`);
    return EXIT.ok;
  },
};

export const model: Command = {
  name: "model",
  usage: "[get | set <model> [--provider P]] [--conversation C | --agent ID]",
  summary:
    "Show or change the model. With --conversation it is that conversation's override; without, the global default.",
  details: ["  --provider P          the provider slug, when the model name is ambiguous", ...scopeHelp],
  options: { ...scopeOptions, provider: { type: "string" } },
  examples: [
    "pheby model",
    "pheby model set anthropic/claude-sonnet-4 --provider anthropic",
    'pheby model set sim-large --conversation "Trip planning"',
    "pheby model set anthropic/claude-sonnet-4 --agent hermes",
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "get", value] = positionals;
    const client = await connect();
    const scope = await scopeOf(client, flags);
    if (action === "get") {
      const current = await client.request({ type: "models.current", ...scope });
      if (flags.json === true)
        writeJson(io, { model: current.model, provider: current.provider, scope: current.scope });
      else
        writeLine(
          io,
          `${current.model ?? "(agent default)"}${current.provider ? ` (${current.provider})` : ""}  [${current.scope}]`,
        );
      return EXIT.ok;
    }
    if (action !== "set") throw new UsageError(`unknown action "${action}" (get, set)`);
    const provider = flags.provider as string | undefined;
    const changed = await client.request({
      type: "model.set",
      model: required([value ?? ""], 0, "<model>"),
      ...(provider ? { provider } : {}),
      ...scope,
    });
    if (flags.json === true)
      writeJson(io, { model: changed.model, provider: changed.provider, scope: changed.scope });
    else
      writeLine(
        io,
        `model: ${changed.model}${changed.provider ? ` (${changed.provider})` : ""}  [${changed.scope}]`,
      );
    return EXIT.ok;
  },
};

export const reasoning: Command = {
  name: "reasoning",
  usage: "[get | set <effort>] [--conversation C | --agent ID]",
  summary: `Show or change the reasoning effort (${REASONING_EFFORTS.join(", ")}; none disables thinking).`,
  details: scopeHelp,
  options: scopeOptions,
  examples: [
    "pheby reasoning",
    'pheby reasoning set high --conversation "Trip planning"',
    "pheby reasoning set none",
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "get", value] = positionals;
    if (action === "set" && !REASONING_EFFORTS.includes(value as ReasoningEffort))
      throw new UsageError(`<effort> must be one of: ${REASONING_EFFORTS.join(", ")}`);
    if (action !== "get" && action !== "set") throw new UsageError(`unknown action "${action}" (get, set)`);
    const client = await connect();
    const scope = await scopeOf(client, flags);
    if (action === "get") {
      const current = await client.request({ type: "reasoning.current", ...scope });
      if (flags.json === true)
        writeJson(io, { effort: current.effort, enabled: current.enabled, scope: current.scope });
      else
        writeLine(
          io,
          `${current.enabled ? (current.effort ?? "(provider default)") : "none (thinking disabled)"}  [${current.scope}]`,
        );
      return EXIT.ok;
    }
    const changed = await client.request({
      type: "reasoning.set",
      effort: value as ReasoningEffort,
      ...scope,
    });
    if (flags.json === true) writeJson(io, { effort: changed.effort, scope: changed.scope });
    else writeLine(io, `reasoning: ${changed.effort}  [${changed.scope}]`);
    return EXIT.ok;
  },
};

export const yolo: Command = {
  name: "yolo",
  usage: "[on | off] <conversation>",
  summary:
    "Show, or turn on or off, auto-approve (YOLO) for one conversation. The agent's own deny rules still apply.",
  examples: [
    'pheby yolo "Trip planning"',
    "pheby yolo on 9f1c0e7a2b3d4c5e6f708192a3b4c5d6",
    'pheby yolo off "Trip planning"',
  ],
  async run({ positionals, flags, io, connect }) {
    const setting = positionals[0] === "on" || positionals[0] === "off" ? positionals[0] : undefined;
    const target = required(positionals, setting ? 1 : 0, "<conversation>");
    const client = await connect();
    const conversation_id = await resolveConversation(client, target);
    const state = setting
      ? await client.request({ type: "yolo.set", conversation_id, enabled: setting === "on" })
      : await client.request({ type: "yolo.current", conversation_id });
    if (flags.json === true) writeJson(io, { conversation_id, enabled: state.enabled });
    else writeLine(io, `yolo ${state.enabled ? "on" : "off"}  ${conversation_id}`);
    return EXIT.ok;
  },
};
