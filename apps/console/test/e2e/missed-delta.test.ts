// The console in real Chromium against a real pheby-server child process, with one append delta
// lost on the way to the page: the client re-opens the conversation, the view shows the snapshot's
// draft (before any later delta or the run's message.complete could repair it), and streaming goes on.
import { rmSync } from "node:fs";
import { applyDelta } from "@pheby/protocol";
import type { Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  hasChromium,
  launchChromium,
  SECRET,
  type ServerProcess,
  startServer,
  tempDataDir,
} from "./harness.js";

type Frame = Record<string, unknown> & { type: string };

describe.skipIf(!hasChromium)("web console: a missed append delta", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  beforeAll(async () => {
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.setDefaultTimeout(12_000);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("re-opens the conversation and shows the whole draft again while the answer streams", async () => {
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    /** What the page should show: the draft as the server sent it, minus the lost frame. */
    let draft = "";
    let dropped: Frame | undefined;
    let repairedBy: Frame | undefined;
    const reopens: Frame[] = [];
    /** Held from the repair's snapshot on (in order), so only the snapshot can fix the bubble. */
    let holding = false;
    const held: string[] = [];
    let page_: WebSocketRoute | undefined;
    let appends = 0;
    await page.routeWebSocket(/\/ws$/, (ws) => {
      page_ = ws;
      const upstream = ws.connectToServer();
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as Frame;
        if (frame.type === "conversation.open" && frame.request_id === undefined) reopens.push(frame);
        upstream.send(message);
      });
      upstream.onMessage((message) => {
        const frame = JSON.parse(String(message)) as Frame;
        if (holding) {
          held.push(String(message));
          return;
        }
        if (frame.type === "message.delta") {
          // The third delta of the answer (offset > 0: an append) is lost.
          if (!dropped && (frame.offset as number) > 0 && draft.length > 0 && ++appends === 2) {
            dropped = frame;
            return;
          }
          try {
            draft = applyDelta(draft, frame as unknown as { offset?: number; text: string });
          } catch {
            // Beyond what the page holds: the page repairs it, not this proxy.
          }
        }
        ws.send(message);
        if (frame.type === "conversation.history" && frame.request_id === undefined) {
          // The snapshot alone must repair the view: what follows it waits.
          repairedBy = frame;
          draft = (frame.run as { text: string } | null)?.text ?? draft;
          holding = true;
        }
      });
    });

    await page.goto(`${server.url}/console/`);
    await page.fill('[data-testid="secret"]', SECRET);
    await page.click('[data-testid="connect"]');
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    await page.click('[data-testid="new-conversation"]');
    await page.waitForSelector('[data-testid="conversation-list"] li.selected');
    await page.fill('[data-testid="message"]', "tell me something long");
    await page.click('[data-testid="send"]');

    // The page noticed the gap and asked for a snapshot, once.
    await expect.poll(() => reopens.length, { timeout: 12_000 }).toBe(1);
    await expect.poll(() => repairedBy !== undefined, { timeout: 12_000 }).toBe(true);
    expect(dropped).toBeDefined();
    // The page has the snapshot and nothing after it: its streaming bubble shows the snapshot's whole
    // draft, although a delta was lost.
    const normalise = (text: string) => text.replace(/\s+/g, " ").trim();
    await expect
      .poll(async () => normalise((await page.textContent(".msg.assistant.streaming")) ?? ""))
      .toBe(normalise(draft));
    expect(normalise(draft)).toContain("You said");

    // The rest of the run, in order: the answer completes as usual.
    holding = false;
    for (const message of held.splice(0)) page_!.send(message);
    await page.waitForFunction(() => !document.querySelector(".msg.streaming"));
    expect(await page.textContent(".msg.assistant >> nth=-1")).toContain("deterministic reply");
    expect(errors).toEqual([]);
  });
});
