import { z } from "zod/v3";
import { boundedText, conversationEvent, OpaqueId, request } from "../common.js";
import { LIMITS } from "../constants.js";

// The `modes` extension (FEATURE_MODES): the agent's modes (plan, ask, auto-edit…) and its slash
// commands. Both lists are the agent's own, bounded here so a chatty agent cannot make the server send
// a frame its clients reject: the server drops what exceeds a count and shortens what exceeds a length.

/** One mode the conversation's agent can work in. */
export const AgentMode = z
  .object({
    mode_id: OpaqueId.describe("The agent's ID of the mode (what mode.set names)"),
    name: boundedText({ max: LIMITS.modeNameChars, nonBlank: true }).describe("Display name"),
    description: boundedText({ max: LIMITS.modeDescriptionChars })
      .nullable()
      .describe("What the mode does, or null when the agent does not say"),
    auto_approves: z
      .boolean()
      .describe(
        "true: in this mode the agent runs tools without asking Pheby (a bypass-permissions, auto-edit or YOLO-like mode)",
      ),
  })
  .describe("An agent mode");

/** One slash command the conversation's agent accepts. */
export const AgentCommand = z
  .object({
    name: boundedText({ max: LIMITS.commandNameChars, nonBlank: true }).describe(
      "The command's name without the leading slash: send it as a chat.send whose text starts with /name",
    ),
    description: boundedText({ max: LIMITS.commandDescriptionChars }).describe("What it does (may be empty)"),
    hint: boundedText({ max: LIMITS.commandHintChars })
      .nullable()
      .describe("The agent's hint for the text after the name, or null when it takes none"),
  })
  .describe("An agent slash command");

/** `modes.list`: the conversation's modes. Never starts an agent (the last known list is answered). */
export const ModesList = request(
  "modes.list",
  { conversation_id: OpaqueId },
  "List the agent's modes for a conversation",
);

/** `modes.snapshot`: reply to `modes.list`. */
export const ModesSnapshot = conversationEvent(
  "modes.snapshot",
  {
    conversation_id: z.string(),
    modes: z
      .array(AgentMode)
      .max(LIMITS.modes)
      .describe("The agent's modes, in its order; empty when it has none (or none is known yet)"),
    current_mode_id: z.string().nullable().describe("The conversation's mode, or null when none is known"),
  },
  "A conversation's modes",
);

/** `mode.set`: choose the conversation's mode (persisted; sent to the agent now or at its next turn). */
export const ModeSet = request(
  "mode.set",
  { conversation_id: OpaqueId, mode_id: OpaqueId },
  "Choose a conversation's mode",
);

/**
 * `mode.changed`: reply to `mode.set` (with request_id) and broadcast to every other `modes`
 * connection (without); also sent when the agent changes mode by itself.
 */
export const ModeChanged = conversationEvent(
  "mode.changed",
  { conversation_id: z.string(), mode_id: z.string() },
  "A conversation's mode changed",
);

/** `commands.list`: the conversation's slash commands. Never starts an agent. */
export const CommandsList = request(
  "commands.list",
  { conversation_id: OpaqueId },
  "List the agent's slash commands for a conversation",
);

/**
 * `commands.snapshot`: reply to `commands.list`, and (without request_id) to every `modes` connection
 * when the agent announces a new list.
 */
export const CommandsSnapshot = conversationEvent(
  "commands.snapshot",
  {
    conversation_id: z.string(),
    commands: z
      .array(AgentCommand)
      .max(LIMITS.commands)
      .describe("The agent's commands, in its order; empty when it has none (or none is known yet)"),
  },
  "A conversation's slash commands",
);

/** Parsed form of {@link AgentMode}. */
export type AgentMode = z.infer<typeof AgentMode>;
/** Parsed form of {@link AgentCommand}. */
export type AgentCommand = z.infer<typeof AgentCommand>;
