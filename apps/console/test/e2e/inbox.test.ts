// The conversation list as an inbox on a phone (390×844) in real Chromium against a real
// pheby-server child process with the simulator: each row's status badge, unread count and preview;
// the "Needs me" and "Archived" filters; archiving from a row; search; and opening a conversation
// marks it read (the same reader's other connection sees its unread count go to 0). The tests run in
// order and build on each other.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PhebyClient } from "@pheby/client";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  expectNoSidewaysScroll as expectPageFits,
  hasChromium,
  launchChromium,
  openPage,
  PHONE,
  RESULTS,
  SECRET,
  type ServerProcess,
  screenshotIfFailed,
  signIn,
  startServer,
  tearDown,
  tempDataDir,
} from "./harness.js";

describe.skipIf(!hasChromium)("web console: the inbox on a phone (390×844)", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let owner: PhebyClient;
  let deploy = "";
  let quokka = "";
  let problems: string[] = [];
  const row = (id: string) => `[data-testid="conversation-list"] li[data-conversation-id="${id}"]`;
  const drawer = () => page.locator("nav.conversations");

  async function openDrawer(): Promise<void> {
    if (await drawer().isVisible()) return;
    await page.click('[data-testid="drawer-toggle"]');
    await drawer().waitFor({ state: "visible" });
  }

  const expectNoSidewaysScroll = () => expectPageFits(page);

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    owner = new PhebyClient({
      url: `${server.url.replace(/^http/, "ws")}/ws`,
      secret: SECRET,
      reconnect: false,
      pingIntervalMs: 0,
    });
    await owner.connect();
    // One conversation waits for an approval, one has an answer nobody read.
    deploy = (await owner.request({ type: "conversation.create", name: "Deploy" })).conversation_id;
    const asked = owner.next("approval.request", (m) => m.conversation_id === deploy);
    await owner.request({ type: "chat.send", conversation_id: deploy, text: "/sim approval" });
    await asked;
    quokka = (await owner.request({ type: "conversation.create", name: "Quokka notes" })).conversation_id;
    const { run_id } = await owner.request({
      type: "chat.send",
      conversation_id: quokka,
      text: "tell me about quokkas",
    });
    await owner.next("run.finished", (m) => m.run_id === run_id);

    browser = await launchChromium(PHONE);
    ({ page, problems } = await openPage(browser.context));
    await signIn(page, server);
  });

  afterAll(async () => {
    owner?.close();
    await tearDown(browser, server, dataDir);
  });

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "inbox-failed-");
    expect(problems.splice(0)).toEqual([]);
  });

  it("each row shows its status, unread count and a one-line preview", async () => {
    await openDrawer();
    await page.waitForSelector(`${row(deploy)} [data-testid="status-badge"][data-status="waiting"]`);
    expect(await page.textContent(`${row(deploy)} [data-testid="status-badge"]`)).toBe("needs you");
    expect(await page.textContent(`${row(quokka)} [data-testid="unread"]`)).toBe("1");
    expect(await page.locator(`${row(quokka)} [data-testid="status-badge"]`).count()).toBe(0);
    expect(await page.textContent(`${row(quokka)} [data-testid="preview"]`)).toContain("quokkas");
    // The preview is one line, inside the drawer.
    const preview = (await page.locator(`${row(quokka)} [data-testid="preview"]`).boundingBox())!;
    expect(preview.height).toBeLessThan(24);
    expect(preview.x + preview.width).toBeLessThanOrEqual(PHONE.viewport.width);
    await expectNoSidewaysScroll();
    await page.screenshot({ path: join(RESULTS, "inbox-phone-list.png") });
  });

  it('"Needs me" lists only the conversations waiting for me', async () => {
    await page.click('[data-testid="filter-waiting"]');
    await page.waitForSelector(row(quokka), { state: "detached" });
    expect(await page.locator(row(deploy)).count()).toBe(1);
    await page.click('[data-testid="filter-all"]');
    await page.waitForSelector(row(quokka));
  });

  it("opening a conversation marks it read, for this reader's other connections too", async () => {
    const read = owner.next("conversation.status", (m) => m.conversation_id === quokka && m.unread === 0);
    await page.click(`${row(quokka)} .open`);
    await drawer().waitFor({ state: "hidden" });
    expect(await page.textContent('[data-testid="conversation-title"]')).toBe("Quokka notes");
    expect((await read).unread).toBe(0);
    // The open conversation is the largest thing on the screen.
    const chat = (await page.locator(".chat").boundingBox())!;
    expect(chat.width).toBeGreaterThanOrEqual(PHONE.viewport.width - 2);
    await openDrawer();
    await page.waitForSelector(`${row(quokka)} [data-testid="unread"]`, { state: "detached" });
  });

  it("archive moves a row to Archived, and unarchive brings it back", async () => {
    await page.click(`${row(deploy)} [data-testid="archive"]`);
    await page.waitForSelector(row(deploy), { state: "detached" });
    const listed = await owner.listConversations({ archived: true });
    expect(listed.map((c) => c.conversation_id)).toEqual([deploy]);

    await page.click('[data-testid="filter-archived"]');
    await page.waitForSelector(row(deploy));
    await page.click(`${row(deploy)} [data-testid="unarchive"]`);
    await page.waitForSelector(row(deploy), { state: "detached" });
    await page.click('[data-testid="filter-all"]');
    await page.waitForSelector(row(deploy));
    expect((await owner.listConversations()).some((c) => c.conversation_id === deploy)).toBe(true);
  });

  it("the search box lists results, and a result opens its conversation", async () => {
    await page.click(`${row(deploy)} .open`);
    await drawer().waitFor({ state: "hidden" });
    await openDrawer();
    await page.fill('[data-testid="search"]', "quokkas");
    await page.press('[data-testid="search"]', "Enter");
    const result = page.locator(`[data-testid="search-result"][data-conversation-id="${quokka}"]`).first();
    await result.waitFor();
    expect(await result.textContent()).toContain("Quokka notes");
    await expectNoSidewaysScroll();
    await page.screenshot({ path: join(RESULTS, "inbox-phone-search.png") });
    await result.click();
    await drawer().waitFor({ state: "hidden" });
    expect(await page.textContent('[data-testid="conversation-title"]')).toBe("Quokka notes");
  });
});
