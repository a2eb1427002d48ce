// Plumbing for the Chromium suite: a real pheby-server child process (the
// simulator, the console on) and Debian's Chromium driven by playwright-core.
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";
import { fixtureGit } from "@pheby/testkit";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { expect } from "vitest";

export const CHROMIUM = process.env.PHEBY_CHROMIUM ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
export const SECRET = "console-e2e-secret-0123456789abcdef";
export const RESULTS = fileURLToPath(new URL("../../test-results/", import.meta.url));
const SERVER_MAIN = fileURLToPath(new URL("../../../server/dist/main.js", import.meta.url));

/** Headless, and no background traffic: the e2e tests run on a closed network. */
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

/**
 * Start `apps/server/dist/main.js` on 127.0.0.1 (port 0 = any) and wait for its "listening" log line.
 * It runs in the system's temp directory, so a single agent's working directory (its one workspace) is
 * never this checkout, a git repository: tests that want one say so (`PHEBY_AGENT_CWD`, `PHEBY_CONFIG`).
 */
export async function startServer(
  dataDir: string,
  port = 0,
  extraEnv: Record<string, string> = {},
): Promise<ServerProcess> {
  if (!existsSync(SERVER_MAIN)) throw new Error(`build apps/server first (${SERVER_MAIN} is missing)`);
  const child: ChildProcess = spawn(process.execPath, [SERVER_MAIN], {
    cwd: tmpdir(),
    env: {
      PATH: process.env.PATH ?? "",
      PHEBY_SECRET: SECRET,
      PHEBY_BIND_HOST: "127.0.0.1",
      PHEBY_PORT: String(port),
      PHEBY_DATA_DIR: dataDir,
      PHEBY_CONSOLE: "true",
      ...extraEnv,
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

/** A phone: 390×844 CSS pixels (an iPhone 12–14), touch, mobile viewport meta honoured. */
export const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true } as const;

/** Chromium with a fresh profile directory (a 1200×800 desktop unless `device` says otherwise); `close()` removes it. */
export async function launchChromium(
  device: { viewport: { width: number; height: number }; isMobile?: boolean; hasTouch?: boolean } = {
    viewport: { width: 1200, height: 800 },
  },
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "pheby-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    ...device,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A test file's browser page: a 12 s default timeout, and every page error and CSP violation the page
 * reports collected in `problems`, which each test's `afterEach` expects empty. Pass `frames` to also
 * collect every WebSocket frame the page receives, raw.
 */
export async function openPage(
  context: BrowserContext,
  frames?: string[],
): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.setDefaultTimeout(12_000);
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => {
    if (/Content Security Policy|Refused to/i.test(msg.text())) problems.push(`CSP: ${msg.text()}`);
  });
  if (frames) page.on("websocket", (ws) => ws.on("framereceived", (f) => frames.push(String(f.payload))));
  return { page, problems };
}

/** Open the console of `server`, sign in with `secret` and wait until it is connected. */
export async function signIn(page: Page, server: { url: string }, secret = SECRET): Promise<void> {
  await page.goto(`${server.url}/console/`);
  await page.fill('[data-testid="secret"]', secret);
  await page.click('[data-testid="connect"]');
  await page.waitForSelector('[data-testid="status"][data-state="open"]');
}

/** On a phone: the page is exactly the phone's width and nothing scrolls sideways (the root nor the body). */
export async function expectNoSidewaysScroll(page: Page): Promise<void> {
  const widths = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    body: document.body.scrollWidth,
    inner: window.innerWidth,
  }));
  expect(widths.inner).toBe(PHONE.viewport.width);
  expect(widths.scroll).toBeLessThanOrEqual(widths.inner);
  expect(widths.body).toBeLessThanOrEqual(widths.inner);
}

/**
 * On a phone: a control is visible, at least 24 px wide, wholly inside the viewport once scrolled to,
 * and clickable (a trial click: nothing covers it).
 */
export async function expectUsable(control: Locator): Promise<void> {
  await control.scrollIntoViewIfNeeded();
  expect(await control.isVisible()).toBe(true);
  const box = (await control.boundingBox())!;
  expect(box.width).toBeGreaterThanOrEqual(24);
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(PHONE.viewport.width);
  expect(box.y).toBeGreaterThanOrEqual(0);
  expect(box.y + box.height).toBeLessThanOrEqual(PHONE.viewport.height);
  await control.click({ trial: true, timeout: 5_000 });
}

/**
 * On a phone: the open conversation is the largest thing on screen. `selector` (the timeline, or a
 * view in its place) is at least `share` of the screen's height and taller than the header, the
 * conversation's head and the composer together.
 */
export async function expectConversationLargest(
  page: Page,
  selector = '[data-testid="timeline"]',
  share = 0.5,
): Promise<void> {
  const heights = await page.evaluate((main) => {
    const height = (s: string) => document.querySelector(s)?.getBoundingClientRect().height ?? 0;
    return { main: height(main), others: [height("header"), height(".chat-head"), height("form.composer")] };
  }, selector);
  expect(heights.main).toBeGreaterThanOrEqual(PHONE.viewport.height * share);
  expect(heights.main).toBeGreaterThan(heights.others.reduce((a, b) => a + b, 0));
}

/** After a failed test, keep what the user would have seen: a screenshot named after the test. */
export async function screenshotIfFailed(
  page: Page | undefined,
  task: { name: string; result?: { state?: string } },
  prefix = "failed-",
): Promise<void> {
  if (task.result?.state !== "fail" || !page) return;
  const name = task.name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60);
  await page.screenshot({ path: join(RESULTS, `${prefix}${name}.png`) }).catch(() => undefined);
}

/** Stop a test file's browser and server and remove its data directory (each may be missing after a failed start). */
export async function tearDown(
  browser: { close(): Promise<void> } | undefined,
  server: ServerProcess | undefined,
  dataDir: string | undefined,
): Promise<void> {
  await browser?.close();
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

/**
 * A real git repository in `dir` (created) whose first commit holds `files` (name → content), made
 * with git's system and global configuration ignored, so the machine's settings cannot change it.
 */
export function gitRepo(dir: string, files: Record<string, string | Buffer>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "first");
}

/** Run git in `dir` (argv, no shell) with a fixed identity and no system or global configuration. */
export const git = fixtureGit;

/**
 * The features the console's next WebSocket asks for in its `hello`: call before the page connects,
 * await after.
 */
export function helloFeatures(page: Page): Promise<string[]> {
  return page.waitForEvent("websocket").then(
    (ws) =>
      new Promise<string[]>((resolve) =>
        ws.on("framesent", (f) => {
          const text = String(f.payload);
          if (text.includes('"hello"')) resolve((JSON.parse(text) as { features?: string[] }).features ?? []);
        }),
      ),
  );
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), "pheby-console-e2e-"));
}

/**
 * A TCP proxy in front of the server, so a test can cut the browser's
 * connections (`cut()`) while the server, and its pending state, live on, and
 * keep it away for a while (`offline(true)` also refuses new connections).
 */
export async function startProxy(
  target: () => number,
): Promise<{ port: number; cut(): void; offline(on: boolean): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createNetServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(target(), "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const cut = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    port: (server.address() as AddressInfo).port,
    cut,
    offline(on) {
      refusing = on;
      if (on) cut();
    },
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A real RGB PNG of `size`×`size` pixels (a diagonal gradient), for upload tests. */
export function makePng(size: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc(size * (1 + size * 3));
  for (let y = 0; y < size; y++)
    for (let x = 0; x < size; x++) rows.set([x * 4, y * 4, 200], y * (1 + size * 3) + 1 + x * 3);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/**
 * A plain static host for the built console on its own port (another origin
 * than the server), like copying `apps/console/dist` to any web host. It
 * sends no CSP, as a careless host might; the console must still work.
 */
export async function startStaticHost(): Promise<{ origin: string; close(): Promise<void> }> {
  const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
  const types: Record<string, string> = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
  };
  const server = createHttpServer((req, res) => {
    // Only files that exist in dist/ by exact name; anything else 404 (no path from the request is joined).
    const name =
      (req.url ?? "/").split("?")[0] === "/" ? "index.html" : (req.url ?? "").split("?")[0]!.slice(1);
    const files = readdirSync(dist, { recursive: true }).map(String);
    if (!files.includes(name)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": types[extname(name)] ?? "application/octet-stream" });
    res.end(readFileSync(join(dist, name)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A two-click confirmation (`confirmOnSecondClick`): arm the button, then click it while armed. The
 * armed state lives on the button, so a list re-rendered between the clicks (a broadcast arriving) or
 * the 3 s disarm on a loaded machine leaves an unarmed button: arm it again, at most three times.
 */
export async function clickToConfirm(page: Page, button: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await page.click(button);
    try {
      await page.click(`${button}[data-armed]`, { timeout: 2_000 });
      return;
    } catch (err) {
      if (attempt === 3) throw err;
    }
  }
}

/** Send a message from the composer and wait until the server accepted it (the console then shows it). */
export async function sendMessage(page: Page, text: string): Promise<void> {
  const before = await page.locator(".msg.user").count();
  await page.fill('[data-testid="message"]', text);
  await page.click('[data-testid="send"]');
  await page.waitForFunction((n) => document.querySelectorAll(".msg.user").length > n, before);
}

/** Wait until the newest run is over (no stop button, no streaming bubble). */
export async function runSettled(page: Page): Promise<void> {
  await page.waitForSelector('[data-testid="stop"]', { state: "hidden" });
  await page.waitForFunction(() => !document.querySelector(".msg.streaming"));
}
