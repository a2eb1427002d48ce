// Shared harness of the reliability suite: the built pheby-server (dist/main.js) as a child
// process, /proc readings of its memory and file descriptors, and @pheby/testkit's raw probe opened
// so that it can bind a source address, trust a CA and send arbitrary bytes, validating every frame
// it gets against @pheby/protocol.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Probe, type ProbeOptions } from "@pheby/testkit";

export const SECRET = "reliability-secret-0123456789abcdef";
export const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));

/** A number from the environment (suite knobs such as PHEBY_SOAK_SECONDS), or the default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${raw}`);
  return n;
}

export function tempDir(prefix = "pheby-rel-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `check` until it returns true (or throw after `timeoutMs`). */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A running pheby-server child process. */
export interface App {
  child: ChildProcess;
  pid: number;
  port: number;
  host: string;
  url: string;
  wsUrl: string;
  dataDir: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, and wait for the process to be gone. */
  kill(): Promise<void>;
  /** SIGTERM, and wait for the exit code. */
  stop(): Promise<number | null>;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Spawn dist/main.js with the simulator on a free loopback port and wait for
 * its "listening" log line. `waitListening: false` returns right after spawn
 * (crash tests kill it at random points of its startup).
 */
export async function startApp(
  opts: {
    dataDir?: string;
    env?: Record<string, string>;
    host?: string;
    waitListening?: boolean;
    /** Start it under this umask (through `sh`), e.g. 0o022 as a login shell gives. */
    umask?: number;
  } = {},
): Promise<App> {
  const dataDir = opts.dataDir ?? join(tempDir(), "data");
  const port = await freePort();
  const host = opts.host ?? "127.0.0.1";
  const [command, args] =
    opts.umask === undefined
      ? [process.execPath, [MAIN]]
      : [
          "sh",
          [
            "-c",
            `umask ${opts.umask.toString(8).padStart(3, "0")} && exec "$@"`,
            "sh",
            process.execPath,
            MAIN,
          ],
        ];
  const child = spawn(command, args, {
    env: {
      PATH: process.env.PATH ?? "",
      PHEBY_SECRET: SECRET,
      PHEBY_PORT: String(port),
      PHEBY_BIND_HOST: host,
      PHEBY_DATA_DIR: dataDir,
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const app: App = {
    child,
    pid: child.pid!,
    port,
    host,
    url: `http://${host}:${port}`,
    wsUrl: `ws://${host}:${port}/ws`,
    dataDir,
    output: () => output,
    exited,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      child.kill("SIGTERM");
      return (await exited).code;
    },
  };
  if (opts.waitListening === false) return app;
  let done = false;
  void exited.then(() => {
    done = true;
  });
  await waitFor(() => output.includes("pheby-server listening") || done, 30_000, "pheby-server to listen");
  if (!output.includes("pheby-server listening")) throw new Error(`pheby-server exited: ${output}`);
  return app;
}

/** Resident set size of a process, in MiB (VmRSS from /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kib / 1024;
}

/** Number of open file descriptors of a process. */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Percentile (0..100) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export interface PeerOptions {
  /** Source address to bind (e.g. 127.0.0.2): lockout is keyed on it. */
  localAddress?: string;
  headers?: Record<string, string>;
  /** CA certificate to trust (wss:// through Caddy). */
  ca?: string;
  servername?: string;
  /** Extensions to ask for in `hello.features` (default: none, a v1 connection). */
  features?: readonly string[];
}

/** @pheby/testkit's probe as this suite opens it: no compression, a 30 s default wait. */
function probeOptions(opts: PeerOptions): ProbeOptions {
  return {
    ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
    ...(opts.headers ? { headers: opts.headers } : {}),
    ...(opts.ca ? { ca: opts.ca } : {}),
    ...(opts.servername ? { servername: opts.servername } : {}),
    perMessageDeflate: false,
    timeoutMs: 30_000,
  };
}

/**
 * One raw WebSocket connection: @pheby/testkit's {@link Probe}. Every text frame it receives is
 * checked against @pheby/protocol (anything else lands in `invalid`).
 */
export type Peer = Probe;
export const Peer = {
  /** Open a socket (resolves on open; rejects if the upgrade fails). */
  open: (url: string, opts: PeerOptions = {}): Promise<Peer> => Probe.open(url, probeOptions(opts)),
  /** Open and authenticate; resolves with the connected peer after `ready`. */
  ready: (url: string, opts: PeerOptions = {}): Promise<Peer> =>
    Probe.connect(url, {
      ...probeOptions(opts),
      secret: SECRET,
      ...(opts.features ? { features: opts.features } : {}),
    }),
};

/** Create a conversation on `peer` and return its id. */
export async function createConversation(peer: Peer, name = "rel"): Promise<string> {
  const reply = await peer.request({ type: "conversation.create", name });
  if (reply.type !== "conversation.created") throw new Error(`create failed: ${JSON.stringify(reply)}`);
  return reply.conversation_id;
}

/** The simulator's deterministic answer to a plain message (docs/simulator.md). */
export function plainReply(text: string, attached = ""): string {
  const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 80);
  return `You said: "${excerpt}".${attached} This is the Pheby simulator, streaming a deterministic reply word by word with no LLM involved. Send "/sim help" to see the scenarios. [model: sim/fast-1 (simcloud), reasoning: medium]`;
}

/** Authenticated HTTP upload through fetch; resolves with the status and parsed body. */
export async function upload(
  baseUrl: string,
  conversationId: string,
  filename: string,
  body: Buffer | string,
  headers: Record<string, string> = { authorization: `Bearer ${SECRET}` },
): Promise<{ status: number; body: { attachment?: { attachment_id: string; size: number } } }> {
  const res = await fetch(
    `${baseUrl}/attachments?conversation_id=${conversationId}&filename=${encodeURIComponent(filename)}`,
    { method: "POST", headers: { "content-type": "text/plain", ...headers }, body: body as BodyInit },
  );
  return { status: res.status, body: (await res.json()) as never };
}
