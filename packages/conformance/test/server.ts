// Starts the real deployable server (apps/server) as a child process on
// 127.0.0.1 with a temp data dir, for the conformance and CLI end-to-end tests.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** apps/server's entry point, built by `pnpm build`. */
export const SERVER_MAIN = resolve(import.meta.dirname, "../../../apps/server/dist/main.js");

/** A running pheby-server child. */
export interface TestServer {
  url: string;
  httpUrl: string;
  secret: string;
  stop(): Promise<void>;
}

/**
 * Why the real server cannot be started from this checkout, or undefined.
 * apps/server is a placeholder until the server core merges into main.
 */
export function serverUnavailable(): string | undefined {
  // Never a silent skip: a missing build is a failure (turbo builds apps/server before these tests).
  if (!process.env.PHEBY_TEST_SERVER_URL && !existsSync(SERVER_MAIN)) {
    throw new Error(`${SERVER_MAIN} is not built: run pnpm build first`);
  }
  return undefined;
}

/** A free TCP port on 127.0.0.1 (the app gets a fixed port, so it need not report a port-0 bind). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function waitHealthy(httpUrl: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`pheby-server exited with ${child.exitCode}:\n${output()}`);
    try {
      const response = await fetch(`${httpUrl}/health`);
      if (response.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`pheby-server did not become healthy:\n${output()}`);
}

/**
 * Start `node apps/server/dist/main.js` with env config; `env` adds or overrides settings.
 * With PHEBY_TEST_SERVER_URL and PHEBY_TEST_SERVER_SECRET set, the tests use that
 * server instead (e.g. another implementation); it is not stopped afterwards.
 */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  const external = process.env.PHEBY_TEST_SERVER_URL;
  if (external) {
    const u = new URL(external);
    return {
      url: `ws://${u.host}/ws`,
      httpUrl: `http://${u.host}`,
      secret: process.env.PHEBY_TEST_SERVER_SECRET ?? "",
      async stop() {},
    };
  }
  const dataDir = mkdtempSync(join(tmpdir(), "pheby-conformance-"));
  const port = await freePort();
  const secret = "conformance-test-secret-0123456789";
  let output = "";
  const child = spawn(process.execPath, [SERVER_MAIN], {
    env: {
      PATH: process.env.PATH ?? "",
      PHEBY_SECRET: secret,
      PHEBY_PORT: String(port),
      PHEBY_BIND_HOST: "127.0.0.1",
      PHEBY_DATA_DIR: dataDir,
      // Pairing (the devices extension) writes this URL into its QR codes.
      PHEBY_PUBLIC_URL: `ws://127.0.0.1:${port}/ws`,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const httpUrl = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(httpUrl, child, () => output);
  } catch (err) {
    child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    httpUrl,
    secret,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
