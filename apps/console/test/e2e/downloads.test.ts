// Attachments in the console, in real Chromium against a real pheby-server child process: a blob:
// URL has the console's origin, so only an inline image keeps its type; an HTML file becomes an
// application/octet-stream blob, which the browser downloads instead of running as the console.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  hasChromium,
  launchChromium,
  makePng,
  RESULTS,
  runSettled,
  SECRET,
  type ServerProcess,
  screenshotIfFailed,
  sendMessage,
  startServer,
  tearDown,
  tempDataDir,
} from "./harness.js";

const PAYLOAD = "<!doctype html><title>pwned</title><script>document.title = 'ran'</script>";

describe.skipIf(!hasChromium)("attachment blobs in the console", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.setDefaultTimeout(12_000);
    // Record the type of every blob the page turns into a URL (an init script: the CSP allows none).
    await page.addInitScript(() => {
      const created: { url: string; type: string }[] = [];
      (window as unknown as { __blobs: typeof created }).__blobs = created;
      const original = URL.createObjectURL.bind(URL);
      URL.createObjectURL = (object: Blob | MediaSource) => {
        const url = original(object);
        created.push({ url, type: object instanceof Blob ? object.type : "media-source" });
        return url;
      };
    });
  });

  afterAll(async () => {
    await tearDown(browser, server, dataDir);
  });

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "downloads-failed-");
  });

  it("downloads an HTML attachment as an application/octet-stream blob; an image preview keeps image/png", async () => {
    await page.goto(`${server.url}/console/`);
    await page.fill('[data-testid="secret"]', SECRET);
    await page.click('[data-testid="connect"]');
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    await page.click('[data-testid="new-conversation"]');
    await page.waitForSelector('[data-testid="conversation-list"] li.selected');
    const png = makePng(16);
    await page.setInputFiles('[data-testid="files"]', [
      { name: "page.html", mimeType: "text/html", buffer: Buffer.from(PAYLOAD) },
      { name: "dot.png", mimeType: "image/png", buffer: png },
    ]);
    await sendMessage(page, "two files");
    await runSettled(page);
    await page.waitForFunction(
      () =>
        (document.querySelector('.attachment.inbound img[alt="dot.png"]') as HTMLImageElement)
          ?.naturalWidth === 16,
    );

    const link = '.attachment.inbound a.download:has-text("page.html")';
    const downloaded = page.waitForEvent("download");
    await page.click(link);
    const download = await downloaded;
    expect(download.suggestedFilename()).toBe("page.html");
    expect(readFileSync((await download.path())!).toString()).toBe(PAYLOAD);

    const blobs = await page.evaluate(
      () => (window as unknown as { __blobs: { url: string; type: string }[] }).__blobs,
    );
    const href = await page.getAttribute(link, "href");
    const preview = await page.getAttribute('.attachment.inbound img[alt="dot.png"]', "src");
    expect(blobs.find((b) => b.url === href)?.type).toBe("application/octet-stream");
    expect(blobs.find((b) => b.url === preview)?.type).toBe("image/png");
    // Opened from the address bar, the blob is a download, never a page of the console's origin.
    const tab = await browser.context.newPage();
    try {
      const second = tab.waitForEvent("download");
      await tab.goto(href!).catch(() => undefined); // "Download is starting" aborts the navigation
      expect((await second).suggestedFilename()).not.toBe("");
      expect(await tab.title()).not.toBe("ran");
    } finally {
      await tab.close();
    }
    await page.screenshot({ path: join(RESULTS, "downloads.png") });
  });
});
