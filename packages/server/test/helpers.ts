import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { PhebyClient, type PhebyClientOptions, type WebSocketLike } from "@pheby/client";
import { checkFeatures, ServerMessage, type ServerMessageOf, type ServerMessageType } from "@pheby/protocol";
import { type Logger, pino } from "pino";
import { afterAll, afterEach, beforeAll } from "vitest";
import { WebSocket } from "ws";
import {
  type AgentBackend,
  type AgentCapabilities,
  createPhebyServer,
  createSimulatorBackend,
  type PhebyServer,
  type PhebyServerOptions,
  type TurnResult,
  type TurnSink,
} from "../src/index.js";
import { createServerCore } from "../src/server.js";
import { type MemorySocket, MemoryTransport } from "../src/transport/memory.js";

export const SECRET = "test-secret-for-pheby-0123456789";

/** Pheby's stdio MCP relay from sources (the build runs `node dist/mcp.js`; tests run the TypeScript through tsx). */
export const MCP_COMMAND = [
  process.execPath,
  "--import",
  pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href,
  fileURLToPath(new URL("../src/mcp/relay.ts", import.meta.url)),
];

/** Capabilities of a scripted test backend that supports none of the optional features. */
export const NO_CAPABILITIES: AgentCapabilities = {
  listSessions: false,
  loadHistory: false,
  deleteSession: false,
  models: false,
  reasoning: false,
  images: false,
};

/**
 * Every frame any test receives that `ServerMessage` rejects. test/setup.ts
 * fails the test after which this is non-empty, so no test can forget.
 */
export const violations: { raw: string; error: string }[] = [];

/**
 * A received frame as a test sees it, recorded in {@link violations} when `ServerMessage` rejects
 * it, when it has fields the schema lacks, or (with `features`: what the connection enabled) when it
 * uses an extension the connection did not enable, so a v1 connection is proven to get v1.
 */
function validate(raw: string, features?: readonly string[]): ServerMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    violations.push({ raw: raw.slice(0, 200), error: "not JSON" });
    return undefined;
  }
  const parsed = ServerMessage.safeParse(value);
  if (!parsed.success) {
    violations.push({ raw: raw.slice(0, 200), error: parsed.error.message });
    return undefined;
  }
  // Nothing may be stripped either: the server must not send fields its schema lacks.
  if (!isDeepStrictEqual(parsed.data, value)) {
    violations.push({ raw: raw.slice(0, 200), error: "frame has fields the schema does not define" });
  }
  // A ready's own extension fields belong to the features it enables.
  const enabled = parsed.data.type === "ready" ? (parsed.data.features ?? []) : features;
  const foreign = enabled === undefined ? undefined : checkFeatures(parsed.data, enabled);
  if (foreign) violations.push({ raw: raw.slice(0, 200), error: foreign.message });
  return value as ServerMessage;
}

/** A `ping` frame of exactly `bytes` bytes (ASCII padding in an extra field). */
export function pingOfSize(bytes: number, requestId = "big"): string {
  const head = `{"type":"ping","request_id":"${requestId}","pad":"`;
  const tail = `"}`;
  return head + "a".repeat(bytes - head.length - tail.length) + tail;
}

/**
 * A running test server with a fresh temp data dir: on 127.0.0.1:0 (ws and HTTP), or, with
 * `transport: "memory"`, with no listening port at all. Its `wsUrl` then is a `memory://` URL
 * that {@link RawClient} and {@link phebyClient} connect to in process; there is no HTTP.
 */
export interface TestServer {
  server: PhebyServer;
  url: string;
  wsUrl: string;
  dataDir: string;
  /** Close the server (idempotent); the data dir stays until {@link TestServer.cleanup}. */
  close(): Promise<void>;
  cleanup(): Promise<void>;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "pheby-server-test-"));
}

/** Register cleanup and return a maker of temp dirs that are removed after each test. */
export function useTempDirs(): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = tempDir();
    dirs.push(d);
    return d;
  };
}

/** A backend without optional capabilities (sessions `s-<conversation>`) whose turns are `prompt`. */
export function scriptedBackend(name: string, prompt: AgentBackend["prompt"]): AgentBackend {
  return {
    name,
    capabilities: NO_CAPABILITIES,
    async start() {},
    async createSession(conversationId) {
      return { sessionId: `s-${conversationId}` };
    },
    prompt,
    async close() {},
  };
}

/**
 * A scripted backend streaming `chunks`, pausing `pauseMs` (default 1) after each, or not at all
 * when the prompt is "burst". With `gate`, it waits after `gate.after` chunks until `gate.open` resolves.
 */
export function streamingBackend(
  chunks: readonly string[],
  opts: { pauseMs?: number; gate?: { after: number; open: Promise<void> } } = {},
): AgentBackend {
  const { pauseMs = 1, gate } = opts;
  return scriptedBackend("streaming", async (input, sink: TurnSink): Promise<TurnResult> => {
    for (const [i, chunk] of chunks.entries()) {
      if (gate && i === gate.after) await gate.open;
      sink.text(chunk);
      if (input.text !== "burst") await new Promise((r) => setTimeout(r, pauseMs));
    }
    return { status: "completed" };
  });
}

/** Which transport a test server serves: ws on a real port, or the in-memory one (no port). */
export type TestTransport = "ws" | "memory";

/** Options of {@link startServer}: the server's, and its transport (default ws). */
export type TestServerOptions = Partial<PhebyServerOptions> & { transport?: TestTransport };

/** In-memory transports of the running memory servers, by their `memory://` URL. */
const memoryServers = new Map<string, MemoryTransport>();
let memoryServerCount = 0;

/** The client end of a new in-memory connection to the server at `url` (a memory server's wsUrl). */
function memoryConnect(url: string, address?: string): MemorySocket {
  const transport = memoryServers.get(url);
  if (!transport) throw new Error(`no in-memory server at ${url}`);
  return transport.connect(address === undefined ? {} : { address });
}

/** A WebSocket constructor for `@pheby/client` that opens in-memory connections. */
const MemoryWebSocket = function MemoryWebSocket(url: string) {
  return memoryConnect(url);
} as unknown as NonNullable<PhebyClientOptions["WebSocket"]>;

async function startMemoryServer(options: Partial<PhebyServerOptions>, dataDir: string): Promise<TestServer> {
  const core = createServerCore({
    secret: SECRET,
    agent: createSimulatorBackend({ delayMs: 1, laterDelayMs: 20 }),
    ...options,
    agentTools: { command: MCP_COMMAND, ...options.agentTools },
    dataDir,
  });
  const transport = new MemoryTransport(core.connections);
  core.attach(transport);
  await core.start();
  const url = `memory://server-${++memoryServerCount}`;
  const wsUrl = `${url}/ws`;
  memoryServers.set(wsUrl, transport);
  const close = async () => {
    await core.close();
    memoryServers.delete(wsUrl);
  };
  const server: PhebyServer = {
    listen: () => Promise.reject(new Error("an in-memory test server does not listen")),
    close,
    sweepAttachments: () => core.sweepAttachments(),
  };
  return {
    server,
    url,
    wsUrl,
    dataDir,
    close,
    cleanup: async () => {
      await close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Start a server with a fast simulator (1 ms per word) unless options override it. */
export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { transport = "ws", ...serverOptions } = options;
  const dataDir = serverOptions.dataDir ?? tempDir();
  if (transport === "memory") return startMemoryServer(serverOptions, dataDir);
  const server = createPhebyServer({
    secret: SECRET,
    agent: createSimulatorBackend({ delayMs: 1, laterDelayMs: 20 }),
    ...serverOptions,
    agentTools: { command: MCP_COMMAND, ...serverOptions.agentTools },
    dataDir,
  });
  const info = await server.listen({ port: 0, host: "127.0.0.1" });
  return {
    server,
    url: info.url,
    wsUrl: `ws://127.0.0.1:${info.port}/ws`,
    dataDir,
    close: () => server.close(),
    cleanup: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type Predicate = (m: ServerMessage) => boolean;

/** A connection a {@link RawClient} drives: a `ws` WebSocket, or the client end of an in-memory one. */
type ClientSocket = WebSocket | MemorySocket;

/**
 * A raw client over ws or in memory: sends anything, records every frame (validated), and
 * awaits frames by predicate.
 */
export class RawClient {
  readonly frames: ServerMessage[] = [];
  /** What the server enabled on this connection (`ready.features`); nothing until then. */
  features: readonly string[] = [];
  /** Every frame as received, byte for byte (before validation). */
  readonly raw: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters: { pred: Predicate; resolve(m: ServerMessage): void }[] = [];
  #seen = 0;

  private constructor(readonly socket: ClientSocket) {
    // Both kinds have the WHATWG event API (ws's text frames arrive as strings there).
    const events = socket as unknown as WebSocketLike;
    this.closed = new Promise((resolve) => {
      events.addEventListener("close", (event) =>
        resolve({ code: event.code, reason: String(event.reason) }),
      );
    });
    events.addEventListener("error", () => {});
    events.addEventListener("message", (event) => {
      this.raw.push(String(event.data));
      const msg = validate(String(event.data), this.features);
      if (!msg) return;
      if (msg.type === "ready") this.features = msg.features ?? [];
      this.frames.push(msg);
      for (const w of [...this.#waiters]) {
        if (w.pred(msg)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    });
  }

  /** The `ws` socket (ws tests only: compression, pauses, raw bytes on the wire). */
  get ws(): WebSocket {
    if (!(this.socket instanceof WebSocket)) throw new Error("an in-memory client has no ws socket");
    return this.socket;
  }

  /** Open a connection (no hello): over ws, or in memory for a memory server's `memory://` URL. */
  static async open(
    wsUrl: string,
    options: {
      headers?: Record<string, string>;
      autoPong?: boolean;
      perMessageDeflate?: boolean;
      /** In memory only: the source address the lockout counts (default "memory"). */
      address?: string;
    } = {},
  ) {
    const socket: ClientSocket = wsUrl.startsWith("memory:")
      ? memoryConnect(wsUrl, options.address)
      : new WebSocket(wsUrl, {
          headers: options.headers,
          autoPong: options.autoPong ?? true,
          perMessageDeflate: options.perMessageDeflate ?? true,
        });
    const client = new RawClient(socket);
    const events = socket as unknown as WebSocketLike;
    await new Promise<void>((resolve, reject) => {
      events.addEventListener("open", () => resolve());
      events.addEventListener("error", reject);
    });
    return client;
  }

  /** Open a connection and complete the handshake, asking for `features` when given. */
  static async connect(
    wsUrl: string,
    options: Parameters<typeof RawClient.open>[1] & { features?: readonly string[] } = {},
  ) {
    const client = await RawClient.open(wsUrl, options);
    const { features } = options;
    client.send({ type: "hello", secret: SECRET, protocol_version: 1, ...(features ? { features } : {}) });
    await client.next("ready");
    return client;
  }

  send(frame: unknown): void {
    this.socket.send(typeof frame === "string" || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /** The next frame (after those already consumed by earlier `next` calls) matching type and predicate. */
  next<T extends ServerMessageType>(
    type: T,
    pred: (m: ServerMessageOf<T>) => boolean = () => true,
    timeoutMs = 10_000,
  ): Promise<ServerMessageOf<T>> {
    const match: Predicate = (m) => m.type === type && pred(m as ServerMessageOf<T>);
    // Frames already received count too, in order.
    for (let i = this.#seen; i < this.frames.length; i++) {
      const m = this.frames[i]!;
      if (match(m)) {
        this.#seen = i + 1;
        return Promise.resolve(m as ServerMessageOf<T>);
      }
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timeout waiting for ${type}`)), timeoutMs);
      this.#waiters.push({
        pred: match,
        resolve: (m) => {
          clearTimeout(timer);
          this.#seen = this.frames.length;
          resolve(m as ServerMessageOf<T>);
        },
      });
    });
  }

  /** Send a request with a fresh request_id and await the frame of `type` (or an error) echoing it. */
  async request<T extends ServerMessageType>(
    frame: Record<string, unknown>,
    type: T,
  ): Promise<ServerMessageOf<T> | ServerMessageOf<"error">> {
    const request_id = `r${Math.random().toString(36).slice(2)}`;
    this.send({ ...frame, request_id });
    const msg = await this.nextAny(
      (m) => m.request_id === request_id && (m.type === type || m.type === "error"),
    );
    return msg as ServerMessageOf<T> | ServerMessageOf<"error">;
  }

  /** Like {@link request} but fails unless the reply has `type`. */
  async ok<T extends ServerMessageType>(
    frame: Record<string, unknown>,
    type: T,
  ): Promise<ServerMessageOf<T>> {
    const msg = await this.request(frame, type);
    if (msg.type !== type) throw new Error(`expected ${type}, got ${JSON.stringify(msg)}`);
    return msg as ServerMessageOf<T>;
  }

  nextAny(pred: Predicate, timeoutMs = 10_000): Promise<ServerMessage> {
    const found = this.frames.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("timeout waiting for a frame")), timeoutMs);
      this.#waiters.push({
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  /** Every frame of one run (run.accepted excluded), from message.start to run.finished, once it has finished. */
  async run(runId: string): Promise<ServerMessage[]> {
    await this.nextAny((m) => m.type === "run.finished" && m.run_id === runId);
    return runFrames(this.frames, runId);
  }

  close(): void {
    this.socket.close();
  }
}

/** The frames of one run (run.accepted excluded): those carrying its run_id, its draft and its notices. */
export function runFrames(frames: readonly ServerMessage[], runId: string): ServerMessage[] {
  return frames.filter(
    (m) => (m.type !== "run.accepted" && "run_id" in m && m.run_id === runId) || isDraft(m, runId),
  );
}

function isDraft(m: ServerMessage, runId: string): boolean {
  return (
    (m.type === "message.delta" || m.type === "message.complete") &&
    (m.message_id === `draft-${runId}` || m.message_id.startsWith(`notice-${runId}-`))
  );
}

/** A `@pheby/client` connected to the test server, whose invalid frames count as violations. */
export async function phebyClient(
  ts: TestServer,
  options: Partial<PhebyClientOptions> = {},
): Promise<PhebyClient> {
  const client = new PhebyClient({
    url: ts.wsUrl,
    secret: SECRET,
    reconnect: false,
    pingIntervalMs: 0,
    ...(ts.wsUrl.startsWith("memory:") ? { WebSocket: MemoryWebSocket } : {}),
    ...options,
  });
  client.onInvalidFrame((f) => violations.push({ raw: f.raw.slice(0, 200), error: f.error.message }));
  await client.connect();
  return client;
}

/** Create a conversation and return its ID. */
export async function createConversation(client: RawClient, name?: string): Promise<string> {
  const created = await client.ok(
    { type: "conversation.create", ...(name ? { name } : {}) },
    "conversation.created",
  );
  return created.conversation_id;
}

/** Send a chat message and return the accepted run ID. */
export async function send(client: RawClient, conversationId: string, text: string): Promise<string> {
  const accepted = await client.ok(
    { type: "chat.send", conversation_id: conversationId, text },
    "run.accepted",
  );
  return accepted.run_id;
}

/** A pino logger at `level` whose output the test can read. */
export function captureLogs(level: "debug" | "warn" = "debug"): { logger: Logger; text(): string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: pino({ level }, stream), text: () => lines.join("") };
}

/**
 * Register hooks that start one server for the file with two connected
 * clients of the same user: `a` (the requester) and `b` (who sees broadcasts).
 */
export function useServerWithTwoClients(options: TestServerOptions = {}) {
  const env = {} as { ts: TestServer; a: RawClient; b: RawClient };
  beforeAll(async () => {
    env.ts = await startServer(options);
    env.a = await RawClient.connect(env.ts.wsUrl);
    env.b = await RawClient.connect(env.ts.wsUrl);
  });
  afterAll(async () => {
    env.a.close();
    env.b.close();
    await env.ts.cleanup();
  });
  return env;
}

/**
 * The built server (dist/, so run `pnpm build` first) in a child process on
 * 127.0.0.1:0 with the default simulator, for tests that kill it (SIGKILL).
 */
export async function spawnServerProcess(dataDir: string): Promise<{ child: ChildProcess; port: string }> {
  const dist = fileURLToPath(new URL("../dist/index.js", import.meta.url));
  const script = `
    import { createPhebyServer } from ${JSON.stringify(dist)};
    const s = createPhebyServer({ secret: ${JSON.stringify(SECRET)}, dataDir: ${JSON.stringify(dataDir)} });
    const info = await s.listen({ port: 0 });
    console.log(String(info.port));`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once("data", (d) => resolve(String(d).trim()));
    child.once("exit", (code) => reject(new Error(`child exited ${code}; is dist built?`)));
  });
  return { child, port };
}

/** Pair a device through `owner` (a connection with the master secret and `devices`); returns its ID and secret. */
export async function pairDevice(ts: TestServer, owner: RawClient, name = "Pixel 9") {
  const { code } = await owner.ok({ type: "pair.create", name }, "pair.created");
  const phone = await RawClient.open(ts.wsUrl);
  phone.send({ type: "hello", protocol_version: 1, features: ["devices"], pairing_code: code });
  const ready = await phone.next("ready");
  phone.close();
  if (!ready.device) throw new Error(`pairing failed: ${JSON.stringify(ready)}`);
  return { id: ready.device.device_id, secret: ready.device.device_secret };
}

/** A connection authenticated with `secret` (default: the master secret) that enabled `features`. */
export async function helloWith(ts: TestServer, features: string[], secret = SECRET): Promise<RawClient> {
  const client = await RawClient.open(ts.wsUrl);
  client.send({ type: "hello", secret, protocol_version: 1, features });
  await client.next("ready");
  return client;
}
