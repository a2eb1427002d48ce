/**
 * Pheby's MCP server for agents, both routes: a Streamable HTTP listener on 127.0.0.1 (http.ts)
 * for agents that declare ACP `mcpCapabilities.http`, and, for the others, a Unix domain socket
 * in a mode-0700 directory (the socket itself 0600, so only Pheby's own user can connect, and
 * nothing is reachable from another machine) that the small stdio relay the agent launches
 * (relay.ts) pipes its MCP stream to (socket.ts). When the agent runs as another OS user, the
 * socket's directory is one Pheby shares with that user's group instead (02770, the socket 0660).
 * Either way the MCP protocol and the tools run here, in Pheby's process (tool-server.ts). Each
 * agent process gets its own random token ({@link McpBridge.grant}), the same on both routes; a
 * connection presents it, and the grant says which conversation each call belongs to.
 *
 * Why a token per agent process and not per session: Hermes registers ACP-provided MCP servers
 * process-wide by name and OpenCode per working directory, so one MCP client serves every session
 * of such an agent; its calls cannot name the session. The grant (the ACP backend) tells calls
 * apart by the turns it is running (docs/architecture.md).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ZodRawShape, z } from "zod/v3";
import type { McpServerHttpSpec, McpServerStdioSpec } from "../agent/port.js";
import { type AgentShare, sharedDir } from "../agent-user/shared-dir.js";
import type { Lockout } from "../auth/lockout.js";
import { MCP_ENV, MCP_SERVER_NAME } from "./channel.js";
import { Grants } from "./grants.js";
import { McpHttpListener } from "./http.js";
import { acceptRelay } from "./socket.js";
import { type McpGrant, runTool, type ToolResult, type ToolServerOptions } from "./tool-server.js";
import { type AgentToolName, TOOL_INPUTS } from "./tools.js";

export { type McpGrant, type ToolCall, ToolError, type ToolResult } from "./tool-server.js";

/** Options of {@link McpBridge.open}. */
export interface McpBridgeOptions extends ToolServerOptions {
  /** Pheby's data directory; the socket lives in `<dataDir>/mcp/` (or a private temp dir when that path is too long). */
  dataDir: string;
  /**
   * The agent runs as another OS user: the socket lives in this shared directory instead (its
   * group's, setgid, 0770; the socket 0660), so the agent's MCP relay can connect.
   */
  shared?: AgentShare;
  /** argv of Pheby's stdio relay (`node …/dist/mcp.js` by default, see `mcpServerCommand`). */
  command: readonly string[];
  /** Counts failed tokens on both routes (its own instance: the listener's peers are all loopback). */
  lockout: Lockout;
  log: {
    debug(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

/** Unix socket paths are limited to ~108 bytes; stay well inside. */
const MAX_SOCKET_PATH = 100;

/** The two entries one agent process may be handed, and the end of its permission. */
export interface McpBridgeGrant {
  /** For an agent without HTTP MCP: the relay, with the socket and the token in its env. */
  stdio: McpServerStdioSpec;
  /** For an agent that declares `mcpCapabilities.http`: the listener, the token as a Bearer header. */
  http: McpServerHttpSpec;
  revoke(): void;
}

/** Pheby's end of both routes. */
export class McpBridge {
  readonly #sockets = new Set<Socket>();
  #closed = false;

  private constructor(
    private readonly options: McpBridgeOptions,
    private readonly server: Server,
    private readonly grants: Grants,
    /** The HTTP route's listener. */
    readonly http: McpHttpListener,
    /** Path of the socket. */
    readonly socketPath: string,
    private readonly dir: string,
  ) {}

  /** Create the socket and the HTTP listener, and start accepting connections. */
  static async open(options: McpBridgeOptions): Promise<McpBridge> {
    const { shared } = options;
    let dir = shared?.dir ?? join(options.dataDir, "mcp");
    if (join(dir, "pheby.sock").length > MAX_SOCKET_PATH) dir = mkdtempSync(join(tmpdir(), "pheby-mcp-"));
    if (shared) sharedDir(dir, shared.gid);
    else {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700); // an existing directory keeps its mode otherwise
    }
    const socketPath = join(dir, "pheby.sock");
    rmSync(socketPath, { force: true }); // left by a crash
    const grants = new Grants(options.lockout);
    const http = await McpHttpListener.open({ grants, server: options, log: options.log });
    const server = createServer();
    const bridge = new McpBridge(options, server, grants, http, socketPath, dir);
    server.on("connection", (socket) => bridge.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    chmodSync(socketPath, shared ? 0o660 : 0o600);
    return bridge;
  }

  /**
   * Let one agent process call: the `mcpServers` entries to hand it in ACP session requests (both
   * carry one fresh random token), and `revoke` for when the process is gone (its connections close).
   */
  grant(grant: McpGrant): McpBridgeGrant {
    const { token, revoke } = this.grants.issue(grant);
    const [command = process.execPath, ...args] = this.options.command;
    return {
      stdio: {
        name: MCP_SERVER_NAME,
        command,
        args,
        env: [
          { name: MCP_ENV.socket, value: this.socketPath },
          { name: MCP_ENV.token, value: token },
        ],
      },
      http: {
        type: "http",
        name: MCP_SERVER_NAME,
        url: this.http.url,
        headers: [{ name: "Authorization", value: `Bearer ${token}` }],
      },
      revoke,
    };
  }

  /**
   * Call a tool from inside Pheby's process (the simulator) as `grant`: the checks an MCP call
   * gets (the tool offered, its arguments against the tool's schema), then the same runner.
   */
  async call(grant: McpGrant, tool: string, args: Record<string, unknown>): Promise<ToolResult> {
    const offered = this.options.tools.find((name): name is AgentToolName => name === tool);
    if (offered === undefined) return { text: "This tool is not offered.", isError: true };
    const parsed = z.object(TOOL_INPUTS[offered] as ZodRawShape).safeParse(args);
    if (!parsed.success) {
      const fields = parsed.error.issues.map((issue) => issue.path.join(".") || "arguments");
      return { text: `Bad arguments: ${[...new Set(fields)].join(", ")}`, isError: true };
    }
    return runTool(this.options, grant, offered, parsed.data, new AbortController().signal);
  }

  /** Stop: every connection closes (pending calls are aborted), the socket is removed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.grants.revokeAll();
    for (const socket of this.#sockets) socket.destroy();
    await Promise.all([
      this.http.close(),
      new Promise<void>((resolve) => this.server.close(() => resolve())),
    ]);
    rmSync(this.socketPath, { force: true });
    if (!this.dir.startsWith(this.options.dataDir) && this.dir !== this.options.shared?.dir)
      rmSync(this.dir, { recursive: true, force: true });
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    acceptRelay(socket, { grants: this.grants, server: this.options, log: this.options.log });
  }
}
