import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PhebyClient, type PhebyClientOptions } from "@pheby/client";
import { Probe, type ProbeOptions, type ProbeSocket } from "@pheby/testkit";
import { type Logger, pino } from "pino";
import { afterAll, afterEach, beforeAll } from "vitest";
import type { InMemorySocket } from "../src/in-memory.js";
import {
  type AgentBackend,
  type AgentCapabilities,
  createInMemoryServer,
  createPhebyServer,
  createSimulatorBackend,
  type InMemoryServer,
  type PhebyServer,
  type PhebyServerOptions,
  type TurnResult,
  type TurnSink,
} from "../src/index.js";

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
 * Every frame any test's {@link RawClient} or {@link phebyClient} receives that @pheby/protocol rejects
 * (with fields its schema lacks, or of a feature the connection did not enable, so a v1 connection is
 * proven to get v1). test/setup.ts fails the test after which this is non-empty, so no test can forget.
 */
export const violations: { raw: string; error: string }[] = [];

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

/** The running memory servers, by their `memory://` URL (one each, so a URL names its server). */
const memoryServers = new Map<string, InMemoryServer>();
let memoryServerCount = 0;

/** The client end of a new in-memory connection to the server at `url` (a memory server's wsUrl). */
function memoryConnect(url: string, address?: string): InMemorySocket {
  const server = memoryServers.get(url);
  if (!server) throw new Error(`no in-memory server at ${url}`);
  return server.connect(address === undefined ? {} : { address });
}

/** A WebSocket constructor for `@pheby/client` that opens in-memory connections. */
const MemoryWebSocket = function MemoryWebSocket(url: string) {
  return memoryConnect(url);
} as unknown as NonNullable<PhebyClientOptions["WebSocket"]>;

/** A server's options with the tests' defaults: the test secret, a fast simulator, the MCP relay from sources. */
function withTestDefaults(options: Partial<PhebyServerOptions>, dataDir: string): PhebyServerOptions {
  return {
    secret: SECRET,
    // A server of several agents (`agents`) takes no single `agent`.
    ...(options.agents ? {} : { agent: createSimulatorBackend({ delayMs: 1, laterDelayMs: 20 }) }),
    ...options,
    agentTools: { command: MCP_COMMAND, ...options.agentTools },
    dataDir,
  };
}

async function startMemoryServer(options: Partial<PhebyServerOptions>, dataDir: string): Promise<TestServer> {
  const memory = await createInMemoryServer(withTestDefaults(options, dataDir));
  const url = `memory://server-${++memoryServerCount}`;
  const wsUrl = `${url}/ws`;
  memoryServers.set(wsUrl, memory);
  const close = async () => {
    await memory.close();
    memoryServers.delete(wsUrl);
  };
  const server: PhebyServer = {
    listen: () => Promise.reject(new Error("an in-memory test server does not listen")),
    close,
    sweepAttachments: () => memory.sweepAttachments(),
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
  const server = createPhebyServer(withTestDefaults(serverOptions, dataDir));
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

/** How {@link RawClient.open} connects: ws options, or the source address of an in-memory connection. */
export interface RawClientOptions {
  headers?: Record<string, string>;
  autoPong?: boolean;
  perMessageDeflate?: boolean;
  /** In memory only: the source address the lockout counts (default "memory"). */
  address?: string;
}

let rawClients = 0;

/** @pheby/testkit's probe as these tests use it: its invalid frames are {@link violations}; memory URLs in memory. */
function probeOptions(wsUrl: string, options: RawClientOptions): ProbeOptions {
  const { address, ...ws } = options;
  return {
    ...ws,
    // Request ids start with "r", as tests expect of this client's requests.
    label: `r${++rawClients}`,
    onInvalid: (f) => violations.push({ raw: f.raw.slice(0, 200), error: f.error }),
    ...(wsUrl.startsWith("memory:")
      ? { socket: () => memoryConnect(wsUrl, address) as unknown as ProbeSocket }
      : {}),
  };
}

/**
 * A raw client over ws or in memory: @pheby/testkit's {@link Probe} (sends anything, records every
 * frame, validated, and awaits frames by predicate), opened the way these tests need.
 */
export type RawClient = Probe;
export const RawClient = {
  /** Open a connection (no hello): over ws, or in memory for a memory server's `memory://` URL. */
  open: (wsUrl: string, options: RawClientOptions = {}): Promise<RawClient> =>
    Probe.open(wsUrl, probeOptions(wsUrl, options)),
  /** Open a connection and complete the handshake with the test secret, asking for `features` when given. */
  connect: (
    wsUrl: string,
    options: RawClientOptions & { features?: readonly string[] } = {},
  ): Promise<RawClient> => {
    const { features, ...rest } = options;
    return Probe.connect(wsUrl, {
      ...probeOptions(wsUrl, rest),
      secret: SECRET,
      ...(features ? { features } : {}),
    });
  },
};

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
