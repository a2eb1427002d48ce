/**
 * The Pheby end of the local channel to its MCP server: a Unix domain socket in a mode-0700
 * directory (the socket itself 0600), so only Pheby's own user can connect, and nothing is
 * reachable from another machine. Each agent process gets its own random token ({@link
 * McpBridge.grant}); a call names the token, the bridge checks it, checks the arguments, asks
 * the grant which conversation the call belongs to, and runs the tool there.
 *
 * Why a token per agent process and not per session: Hermes registers ACP-provided MCP servers
 * process-wide by name and OpenCode per working directory, so one MCP server process serves
 * every session of such an agent; the process cannot know the session. The grant (the ACP
 * backend) tells calls apart by the turns it is running (docs/architecture.md).
 */
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ZodError } from "zod/v3";
import type { McpServerSpec } from "../agent/port.js";
import { type ChannelResponse, MAX_REQUEST_BYTES, MCP_ENV, MCP_SERVER_NAME } from "./channel.js";
import { type AgentToolName, isAgentToolName, parseToolArguments } from "./tools.js";

/** A checked tool call, to run in its conversation. */
export interface ToolCall {
  conversationId: string;
  tool: AgentToolName;
  args: Record<string, unknown>;
  /** Aborted when the agent gives up on the call (its MCP server closed the connection) or Pheby shuts down. */
  signal: AbortSignal;
  /** The agent's own timeout of one MCP tool call, when its grant knew it. */
  toolTimeoutMs: number | undefined;
}

/** A tool's result text; `isError` marks a failure the agent should read as one. */
export interface ToolResult {
  text: string;
  isError?: boolean;
}

/** A refusal meant for the agent (its message is the tool's error text). */
export class ToolError extends Error {
  override readonly name = "ToolError";
}

/** One agent process's permission to call, and how its calls map to conversations. */
export interface McpGrant {
  /** The agent's name (ACP `agentInfo.name`), if known, for logs. */
  agent?: string;
  /** The agent's own timeout of one MCP tool call, when known. */
  toolTimeoutMs?: number;
  /** The conversation a call belongs to, or null when it cannot be told (e.g. outside any turn). */
  conversationOf(call: { tool: AgentToolName; args: Record<string, unknown> }): Promise<string | null>;
}

/** Options of {@link McpBridge.open}. */
export interface McpBridgeOptions {
  /** Pheby's data directory; the socket lives in `<dataDir>/mcp/` (or a private temp dir when that path is too long). */
  dataDir: string;
  /** The tools offered to agents (others are refused even if asked for). */
  tools: readonly AgentToolName[];
  /** argv of Pheby's MCP server (`node …/dist/mcp.js` by default, see `mcpServerCommand`). */
  command: readonly string[];
  /** Seconds `ask_user` waits (told to the model in the tool's description). */
  askTimeoutSeconds: number;
  /** The default time zone of schedules (told to the model). */
  timezone: string;
  /** Run a checked call. A {@link ToolError} becomes the agent's error text. */
  run(call: ToolCall): Promise<ToolResult>;
  log: {
    debug(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

/** A request line must arrive this soon after connecting. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Unix socket paths are limited to ~108 bytes; stay well inside. */
const MAX_SOCKET_PATH = 100;

const hash = (token: string) => createHash("sha256").update(token).digest("hex");

/** The local channel's server end. */
export class McpBridge {
  readonly #grants = new Map<string, McpGrant>();
  readonly #sockets = new Set<Socket>();
  readonly #calls = new Set<AbortController>();
  #closed = false;

  private constructor(
    private readonly options: McpBridgeOptions,
    private readonly server: Server,
    /** Path of the socket. */
    readonly socketPath: string,
    private readonly dir: string,
  ) {}

  /** Create the socket and start accepting calls. */
  static async open(options: McpBridgeOptions): Promise<McpBridge> {
    let dir = join(options.dataDir, "mcp");
    if (join(dir, "pheby.sock").length > MAX_SOCKET_PATH) dir = mkdtempSync(join(tmpdir(), "pheby-mcp-"));
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700); // an existing directory keeps its mode otherwise
    const socketPath = join(dir, "pheby.sock");
    rmSync(socketPath, { force: true }); // left by a crash
    const server = createServer();
    const bridge = new McpBridge(options, server, socketPath, dir);
    server.on("connection", (socket) => bridge.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    chmodSync(socketPath, 0o600);
    return bridge;
  }

  /**
   * Let one agent process call: returns the `mcpServers` entry to hand it in ACP session
   * requests (its env carries a fresh random token), and `revoke` for when the process is gone.
   */
  grant(grant: McpGrant): { server: McpServerSpec; revoke(): void } {
    const token = randomBytes(32).toString("hex");
    const key = hash(token);
    this.#grants.set(key, grant);
    const [command = process.execPath, ...args] = this.options.command;
    const env: Record<string, string> = {
      [MCP_ENV.socket]: this.socketPath,
      [MCP_ENV.token]: token,
      [MCP_ENV.tools]: this.options.tools.join(","),
      [MCP_ENV.askTimeoutSeconds]: String(this.options.askTimeoutSeconds),
      [MCP_ENV.timezone]: this.options.timezone,
    };
    return {
      server: {
        name: MCP_SERVER_NAME,
        command,
        args,
        env: Object.entries(env).map(([name, value]) => ({ name, value })),
      },
      revoke: () => this.#grants.delete(key),
    };
  }

  /** Stop: pending calls are aborted, the socket is removed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#grants.clear();
    for (const call of this.#calls) call.abort();
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.socketPath, { force: true });
    if (!this.dir.startsWith(this.options.dataDir)) rmSync(this.dir, { recursive: true, force: true });
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", (err) => this.options.log.debug({ err: err.message }, "mcp channel socket error"));
    let buffered = "";
    let bytes = 0;
    const timer = setTimeout(
      () => this.#reply(socket, { ok: false, error: "No request." }),
      REQUEST_TIMEOUT_MS,
    );
    timer.unref();
    socket.setEncoding("utf8");
    const onData = (chunk: string) => {
      bytes += Buffer.byteLength(chunk);
      buffered += chunk;
      const nl = buffered.indexOf("\n");
      if (nl < 0 && bytes <= MAX_REQUEST_BYTES) return;
      socket.off("data", onData);
      clearTimeout(timer);
      if (nl < 0 || Buffer.byteLength(buffered.slice(0, nl)) > MAX_REQUEST_BYTES) {
        this.#reply(socket, { ok: false, error: "The request is too large." });
        return;
      }
      void this.#handle(socket, buffered.slice(0, nl));
    };
    socket.on("data", onData);
  }

  async #handle(socket: Socket, line: string): Promise<void> {
    let request: { token?: unknown; tool?: unknown; arguments?: unknown };
    try {
      request = JSON.parse(line) as typeof request;
    } catch {
      this.#reply(socket, { ok: false, error: "The request is not JSON." });
      return;
    }
    const grant = typeof request.token === "string" ? this.#grants.get(hash(request.token)) : undefined;
    if (!grant) {
      this.options.log.warn({}, "mcp channel call with an unknown token refused");
      this.#reply(socket, { ok: false, error: "Not authorized." });
      return;
    }
    const controller = new AbortController();
    const onClose = () => controller.abort();
    socket.once("close", onClose);
    try {
      this.#reply(socket, await this.call(grant, request.tool, request.arguments, controller.signal));
    } finally {
      socket.off("close", onClose);
    }
  }

  /**
   * Check and run one call of `grant`'s: the tool must be offered, its arguments valid, its
   * conversation known. Socket calls come here once their token matched; the in-process
   * simulator calls it directly, so its calls take the very same path.
   */
  async call(
    grant: McpGrant,
    tool: unknown,
    rawArgs: unknown,
    signal?: AbortSignal,
  ): Promise<ChannelResponse> {
    if (typeof tool !== "string" || !isAgentToolName(tool) || !this.options.tools.includes(tool)) {
      return { ok: false, error: "This tool is not offered." };
    }
    let args: Record<string, unknown>;
    try {
      args = parseToolArguments(tool, rawArgs);
    } catch (err) {
      return { ok: false, error: `Bad arguments: ${describeZodError(err)}` };
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#calls.add(controller);
    try {
      const conversationId = await grant.conversationOf({ tool, args });
      if (conversationId === null) {
        throw new ToolError(
          "Pheby cannot tell which conversation this call belongs to: its tools work while you answer a message in a Pheby conversation.",
        );
      }
      const result = await this.options.run({
        conversationId,
        tool,
        args,
        signal: controller.signal,
        toolTimeoutMs: grant.toolTimeoutMs,
      });
      return result.isError ? { ok: false, error: result.text } : { ok: true, text: result.text };
    } catch (err) {
      if (!(err instanceof ToolError))
        this.options.log.error({ err, tool, agent: grant.agent }, "agent tool failed");
      return { ok: false, error: err instanceof ToolError ? err.message : "Pheby failed to run this tool." };
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#calls.delete(controller);
    }
  }

  #reply(socket: Socket, response: ChannelResponse): void {
    if (socket.destroyed) return;
    socket.end(`${JSON.stringify(response)}\n`);
  }
}

/** "question: Required; choices.0: String must contain at least 1 character(s)" — paths and rules, no values. */
function describeZodError(err: unknown): string {
  if (!(err instanceof ZodError)) return "invalid";
  return err.issues
    .map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`)
    .slice(0, 5)
    .join("; ");
}
