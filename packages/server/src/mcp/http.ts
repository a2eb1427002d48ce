/**
 * The HTTP route: Pheby's tools as a Streamable HTTP MCP server (the SDK's transport, stateful
 * sessions) inside Pheby's process, for agents that declare ACP `mcpCapabilities.http`. It listens
 * on 127.0.0.1 only, on an ephemeral port, at `/mcp`. Before anything is read, a request must:
 * name exactly that address as its `Host` (421 otherwise: a DNS-rebound page names its own host),
 * carry no `Origin` (403: agents are not browsers, and a browser always sends one on a cross-site
 * POST), come from a source that is not locked out (429), and present its agent process's token as
 * `Authorization: Bearer` (401, counted towards the lockout). An MCP session belongs to the grant
 * that opened it; another grant's session ID is unknown (404).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { presentedSecrets } from "../auth/http.js";
import { retryAfter, retryAfterSeconds } from "../auth/lockout.js";
import { MAX_REQUEST_BYTES } from "./channel.js";
import type { Grants, LiveGrant } from "./grants.js";
import { type ToolServerOptions, toolServer } from "./tool-server.js";

/** The path of the MCP endpoint. */
export const MCP_HTTP_PATH = "/mcp";
/**
 * MCP sessions one agent process may hold open; past it the least recently used one is closed
 * (its client gets 404 and starts a new one). Agents open one per MCP client: Codex one per ACP
 * session, so this bounds memory, not ordinary use.
 */
export const MAX_SESSIONS_PER_GRANT = 256;
/** Connections the listener holds at once (each agent's client keeps a few). */
const MAX_CONNECTIONS = 1_024;

interface McpSession {
  grant: LiveGrant;
  transport: StreamableHTTPServerTransport;
  close(): void;
}

/** What the listener needs. */
export interface HttpDeps {
  grants: Grants;
  server: ToolServerOptions;
  log: { warn(obj: object, msg?: string): void; debug(obj: object, msg?: string): void };
}

/** The HTTP MCP listener. */
export class McpHttpListener {
  /** Open sessions by ID; a Map keeps insertion order, which {@link #touch} keeps as recency order. */
  readonly #sessions = new Map<string, McpSession>();

  private constructor(
    private readonly deps: HttpDeps,
    private readonly http: Server,
    /** The `Host` every request must name: `127.0.0.1:<port>`. */
    readonly host: string,
  ) {}

  /** Listen on 127.0.0.1, an ephemeral port. */
  static async open(deps: HttpDeps): Promise<McpHttpListener> {
    const http = createServer();
    http.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(0, "127.0.0.1", () => {
        http.off("error", reject);
        resolve();
      });
    });
    const { port } = http.address() as AddressInfo;
    const listener = new McpHttpListener(deps, http, `127.0.0.1:${port}`);
    http.on("request", (req, res) => {
      listener.#handle(req, res).catch((err: unknown) => {
        deps.log.warn({ err }, "mcp http request failed");
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    return listener;
  }

  /** The URL an agent's `mcpServers` entry names. */
  get url(): string {
    return `http://${this.host}${MCP_HTTP_PATH}`;
  }

  /** How many MCP sessions are open (for tests and the bench). */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** Stop listening; every session and connection closes. */
  async close(): Promise<void> {
    for (const session of [...this.#sessions.values()]) session.close();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.headers.host !== this.host) return refuse(res, 421, "Misdirected request.");
    if (req.headers.origin !== undefined) return refuse(res, 403, "Browsers may not call Pheby's tools.");
    const source = req.socket.remoteAddress ?? "unknown";
    const auth = this.deps.grants.authorize(source, presentedSecrets(req.headers)[0]);
    if (!auth.ok && auth.reason === "locked") {
      res.setHeader("Retry-After", String(retryAfterSeconds(auth.remainingMs)));
      return refuse(res, 429, `Too many failed attempts; ${retryAfter(auth.remainingMs)}`);
    }
    if (!auth.ok) {
      this.deps.log.warn({}, "mcp http request with an unknown token refused");
      return refuse(res, 401, "Not authorized.");
    }
    if (new URL(req.url ?? "/", "http://x").pathname !== MCP_HTTP_PATH) return refuse(res, 404, "Not found.");
    let body: unknown;
    if (req.method === "POST") {
      const read = await readJson(req);
      if (read === TOO_LARGE) return refuse(res, 413, "The request is too large.");
      if (read === NOT_JSON) return rpcError(res, 400, -32700, "Parse error");
      body = read.value;
    }
    const id = req.headers["mcp-session-id"];
    const existing = typeof id === "string" ? this.#sessions.get(id) : undefined;
    if (existing && existing.grant === auth.grant) {
      this.#touch(id as string, existing);
      return existing.transport.handleRequest(req, res, body);
    }
    if (id !== undefined) return rpcError(res, 404, -32001, "Session not found");
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return rpcError(res, 400, -32000, "Bad Request: No valid session ID provided");
    }
    const session = this.#open(auth.grant);
    await session.transport.handleRequest(req, res, body);
    if (session.transport.sessionId === undefined) session.close(); // the initialize failed
  }

  #open(grant: LiveGrant): McpSession {
    const server = toolServer(this.deps.server, grant);
    let sessionId: string | undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sid) => {
        sessionId = sid;
        this.#sessions.set(sid, session);
        this.#evict(grant);
      },
    });
    const close = () => {
      grant.revoked.removeEventListener("abort", close);
      if (sessionId !== undefined) this.#sessions.delete(sessionId);
      void server.close();
    };
    const session: McpSession = { grant, transport, close };
    // DELETE by the client, or Pheby closing the server, closes the transport.
    transport.onclose = close;
    grant.revoked.addEventListener("abort", close, { once: true });
    void server.connect(transport);
    return session;
  }

  #touch(id: string, session: McpSession): void {
    this.#sessions.delete(id);
    this.#sessions.set(id, session);
  }

  /** Close `grant`'s least recently used sessions past {@link MAX_SESSIONS_PER_GRANT}. */
  #evict(grant: LiveGrant): void {
    const own = [...this.#sessions.values()].filter((s) => s.grant === grant);
    for (const session of own.slice(0, Math.max(0, own.length - MAX_SESSIONS_PER_GRANT))) {
      session.close();
    }
  }
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" }).end(message);
}

function rpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

const TOO_LARGE = Symbol("too large");
const NOT_JSON = Symbol("not JSON");

/** The request's JSON body, read up to {@link MAX_REQUEST_BYTES}. */
async function readJson(
  req: IncomingMessage,
): Promise<{ value: unknown } | typeof TOO_LARGE | typeof NOT_JSON> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_REQUEST_BYTES) return TOO_LARGE;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BYTES) return TOO_LARGE;
    chunks.push(chunk);
  }
  try {
    return { value: JSON.parse(Buffer.concat(chunks).toString("utf8")) };
  } catch {
    return NOT_JSON;
  }
}
