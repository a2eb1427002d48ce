/**
 * Pheby's MCP server as one piece: what each tool does against the run engine and the scheduler
 * ({@link agentTools}), the {@link McpBridge} that opens at start (before the backend can spawn an
 * agent), and the {@link AgentTools} the agent host hands a backend. Tool calls reach a conversation
 * through the agent session they come from.
 */
import type { AgentTools, ClarifyAnswer, ClarifyQuestion } from "../agent/port.js";
import type { AgentShare } from "../agent-user/shared-dir.js";
import type { Lockout } from "../auth/lockout.js";
import type { Scheduler } from "../schedules/scheduler.js";
import type { ConversationRow } from "../store/store.js";
import { agentTools } from "./agent-tools.js";
import { McpBridge, type ToolCall, ToolError, type ToolResult } from "./bridge.js";
import type { AgentToolName } from "./tools.js";

/** The run engine's part of the tools (mcp sits beside runs, so it names only what it calls). */
export interface ToolRuns {
  /** A clarification in the conversation's active run; null when it has none. */
  ask(
    conversationId: string,
    question: ClarifyQuestion,
    withdraw: AbortSignal,
  ): Promise<ClarifyAnswer> | null;
  /** An assistant message nobody asked for, as a run of its own. */
  unsolicited(conv: ConversationRow, text: string): Promise<void>;
  /** A host file into the conversation; null when the store refused it. */
  deliverFile(
    conv: ConversationRow,
    path: string,
    caption: string | undefined,
  ): Promise<{ filename: string } | null>;
}

/** What {@link AgentToolsService} needs. */
export interface AgentToolsServiceDeps {
  /** The tools offered. */
  tools: readonly AgentToolName[];
  /** How long `ask_user` waits at most. */
  askTimeoutMs: number;
  /** argv of the stdio relay. */
  command: readonly string[];
  dataDir: string;
  /** The directory shared with the agent's OS user, when it runs as another one. */
  shared?: AgentShare;
  scheduler: Scheduler;
  runs: ToolRuns;
  /** A conversation by ID (undefined: deleted). */
  conversation(conversationId: string): ConversationRow | undefined;
  /** The conversation of an agent session, or null. */
  conversationOfSession(sessionId: string): string | null;
  /** Failed tokens, counted apart from failed hellos (the listener's peers are all local). */
  lockout: Lockout;
  log: {
    debug(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

/** Pheby's MCP server: open it at start, hand {@link tools} to the backend, close it at shutdown. */
export class AgentToolsService {
  #bridge: McpBridge | undefined;
  readonly #run: (call: ToolCall) => Promise<ToolResult>;

  constructor(private readonly deps: AgentToolsServiceDeps) {
    const conversationOf = (id: string) => {
      const conv = deps.conversation(id);
      if (!conv) throw new ToolError("The conversation was deleted.");
      return conv;
    };
    this.#run = agentTools({
      scheduler: deps.scheduler,
      askTimeoutMs: deps.askTimeoutMs,
      ask: (id, question, withdraw) => {
        const asked = deps.runs.ask(id, question, withdraw);
        if (!asked) {
          throw new ToolError("Pheby can ask the user only while you answer a message in this conversation.");
        }
        return asked;
      },
      notify: (id, title, body) => {
        deps.runs.unsolicited(conversationOf(id), `${title}\n\n${body}`).catch((err) => {
          deps.log.error({ err }, "notify_user message failed");
        });
      },
      sendFile: async (id, path, caption) => {
        const delivered = await deps.runs.deliverFile(conversationOf(id), path, caption);
        if (!delivered) {
          throw new ToolError(
            "Pheby did not send the file: it must be a regular file inside the directories Pheby may deliver from.",
          );
        }
        return delivered;
      },
    });
  }

  /** Open the bridge (its socket and HTTP listener); before the backend starts. */
  async open(): Promise<void> {
    const { deps } = this;
    this.#bridge ??= await McpBridge.open({
      dataDir: deps.dataDir,
      ...(deps.shared ? { shared: deps.shared } : {}),
      tools: deps.tools,
      command: deps.command,
      askTimeoutSeconds: Math.round(deps.askTimeoutMs / 1000),
      timezone: deps.scheduler.defaultTimezone,
      run: this.#run,
      lockout: deps.lockout,
      log: deps.log,
    });
  }

  /** The tools as the agent host offers them to the backend. */
  get tools(): AgentTools {
    const { deps } = this;
    return {
      names: deps.tools,
      grant: (caller) =>
        this.#opened().grant({
          ...(caller.agent === undefined ? {} : { agent: caller.agent }),
          ...(caller.toolTimeoutMs === undefined ? {} : { toolTimeoutMs: caller.toolTimeoutMs }),
          conversationOf: async (call) => {
            const session = await caller.sessionOf(call);
            return session === null ? null : deps.conversationOfSession(session);
          },
        }),
      call: (sessionId, tool, args) =>
        this.#opened().call(
          { conversationOf: async () => deps.conversationOfSession(sessionId) },
          tool,
          args,
        ),
    };
  }

  async close(): Promise<void> {
    await this.#bridge?.close();
  }

  #opened(): McpBridge {
    if (!this.#bridge) throw new Error("Pheby's MCP bridge is not open");
    return this.#bridge;
  }
}
