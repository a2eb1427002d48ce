// Plumbing for the Chromium suite: a real pheby-server child process (the
// simulator, the console on) and Debian's Chromium driven by playwright-core.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = process.env.PHEBY_CHROMIUM ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
export const SECRET = "console-e2e-secret-0123456789abcdef";
export const RESULTS = fileURLToPath(new URL("../../test-results/", import.meta.url));
const SERVER_MAIN = fileURLToPath(new URL("../../../server/dist/main.js", import.meta.url));

/** The flags the issue asks for: headless, and no background traffic on a closed network. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A pheby-server child process. */
export interface ServerProcess {
  port: number;
  /** HTTP base, e.g. http://127.0.0.1:1234 */
  url: string;
  dataDir: string;
  /** Stop it with SIGTERM (graceful) or SIGKILL. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Start `apps/server/dist/main.js` on 127.0.0.1 (port 0 = any) and wait for its "listening" log line. */
export async function startServer(dataDir: string, port = 0): Promise<ServerProcess> {
  if (!existsSync(SERVER_MAIN)) throw new Error(`build apps/server first (${SERVER_MAIN} is missing)`);
  const child: ChildProcess = spawn(process.execPath, [SERVER_MAIN], {
    env: {
      PATH: process.env.PATH ?? "",
      PHEBY_SECRET: SECRET,
      PHEBY_BIND_HOST: "127.0.0.1",
      PHEBY_PORT: String(port),
      PHEBY_DATA_DIR: dataDir,
      PHEBY_CONSOLE: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /"console":"(http:\/\/127\.0\.0\.1:\d+)\/console\/"/.exec(buffer);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`pheby-server exited (${code}): ${stderr}`)));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    port: Number(new URL(url).port),
    url,
    dataDir,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Chromium with a fresh profile directory; `close()` removes it. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "pheby-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1200, height: 800 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), "pheby-console-e2e-"));
}
