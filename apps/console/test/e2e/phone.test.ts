// The console on a phone (390×844, touch) in real Chromium against a real
// pheby-server child process: nothing may scroll sideways, the conversation
// list is a drawer, and every approval and clarification control is inside the
// viewport and clickable. One browser, one page and one server; the tests run
// in order and build on each other.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  expectNoSidewaysScroll as expectPageFits,
  expectUsable,
  hasChromium,
  launchChromium,
  openPage,
  PHONE,
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

describe.skipIf(!hasChromium)("web console on a phone (390×844)", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let problems: string[] = [];
  const shot = (name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`) });
  const lastAssistant = ".msg.assistant >> nth=-1";

  /** The page is no wider than the viewport: nothing scrolls sideways. */
  const expectNoSidewaysScroll = () => expectPageFits(page);

  const send = (text: string) => sendMessage(page, text);
  const settled = () => runSettled(page);
  /** True when the last match of `first` comes before the last match of `second`. */
  const precedes = (first: string, second: string) =>
    page.evaluate(
      ([a, b]) => {
        const x = [...document.querySelectorAll(a!)].at(-1);
        const y = [...document.querySelectorAll(b!)].at(-1);
        return Boolean(x && y && x.compareDocumentPosition(y) & Node.DOCUMENT_POSITION_FOLLOWING);
      },
      [first, second],
    );

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    browser = await launchChromium(PHONE);
    ({ page, problems } = await openPage(browser.context));
  });

  afterAll(() => tearDown(browser, server, dataDir));

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "phone-failed-");
    expect(problems.splice(0)).toEqual([]);
  });

  it("connects from a connect screen that fits the phone", async () => {
    await page.goto(`${server.url}/console/`);
    await expectNoSidewaysScroll();
    await expectUsable(page.locator('[data-testid="connect"]'));
    await page.fill('[data-testid="secret"]', SECRET);
    await page.click('[data-testid="connect"]');
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    await expectNoSidewaysScroll();
  });

  it("shows the conversation list as a drawer that opens and closes", async () => {
    const drawer = page.locator("nav.conversations");
    const toggle = page.locator('[data-testid="drawer-toggle"]');
    expect(await drawer.isVisible()).toBe(false);
    await expectUsable(toggle);

    await toggle.click();
    await expectUsable(page.locator('[data-testid="new-conversation"]'));
    expect(await toggle.getAttribute("aria-expanded")).toBe("true");
    await expectNoSidewaysScroll();
    // A tap beside the drawer closes it.
    await page.mouse.click(PHONE.viewport.width - 10, PHONE.viewport.height / 2);
    await drawer.waitFor({ state: "hidden" });
    expect(await toggle.getAttribute("aria-expanded")).toBe("false");

    // Escape closes it too.
    await toggle.click();
    await drawer.waitFor({ state: "visible" });
    await page.keyboard.press("Escape");
    await drawer.waitFor({ state: "hidden" });

    // Choosing (here: creating) a conversation closes it and shows the chat.
    await toggle.click();
    // A trial click waits until the drawer has stopped sliding.
    await page.click('[data-testid="new-conversation"]', { trial: true });
    await shot("phone-drawer");
    await page.click('[data-testid="new-conversation"]');
    await page.waitForSelector('[data-testid="conversation-list"] li.selected', { state: "attached" });
    await drawer.waitFor({ state: "hidden" });
    await expectNoSidewaysScroll();
  });

  it("has a full-width composer", async () => {
    const box = (await page.locator('[data-testid="message"]').boundingBox())!;
    expect(box.width).toBeGreaterThanOrEqual(PHONE.viewport.width * 0.85);
    await expectUsable(page.locator('[data-testid="message"]'));
    await expectUsable(page.locator('[data-testid="send"]'));
    await expectUsable(page.locator('[data-testid="files"]'));
    await send("Hello from my phone");
    await settled();
    await expectNoSidewaysScroll();
  });

  it("fits an approval card: every choice and the deny reason are inside the viewport and clickable", async () => {
    await send("/sim approval");
    const card = page.locator(".card.approval.open");
    await card.waitFor();
    await expectNoSidewaysScroll();
    const choices = await card.locator("button").evaluateAll((bs) => bs.map((b) => b.dataset.choice));
    expect(choices).toEqual(["once", "session", "always", "deny"]);
    for (const choice of choices) await expectUsable(card.locator(`button[data-choice="${choice}"]`));
    await expectUsable(card.locator("input.reason"));
    await shot("phone-approval");

    await card.locator("input.reason").fill("not from my phone");
    await card.locator('button[data-choice="deny"]').click();
    await page.waitForSelector('.card.approval.resolved .card-status:has-text("Answered: Deny")');
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain(
      'Your reason: "not from my phone".',
    );
    // The card reads before the answer it led to.
    expect(await precedes(".card.approval.resolved", ".msg.assistant")).toBe(true);
    await expectNoSidewaysScroll();
  });

  it("fits a clarification card: choices, the Other field and Send are inside the viewport and clickable", async () => {
    await send("/sim clarify");
    let card = page.locator(".card.clarify.open");
    await card.waitFor();
    await expectNoSidewaysScroll();
    expect(await card.locator(".choices button").allTextContents()).toEqual(["staging", "production"]);
    for (const choice of ["staging", "production"])
      await expectUsable(card.locator(`.choices button[data-choice="${choice}"]`));
    await expectUsable(card.locator('input[name="other"]'));
    await expectUsable(card.locator('form.other button[type="submit"]'));
    await shot("phone-clarify");
    await card.locator('button[data-choice="production"]').click();
    await page.waitForSelector('.card.clarify.resolved .card-status:has-text("Answered.")');
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe('You answered: "production".');
    expect(await precedes(".card.clarify.resolved", ".msg.assistant")).toBe(true);

    // The free-text way, with the Send button.
    await send("/sim clarify");
    card = page.locator(".card.clarify.open");
    await card.waitFor();
    await card.locator('input[name="other"]').fill("canary first");
    await card.locator('form.other button[type="submit"]').click();
    await page.waitForFunction(() => document.querySelectorAll(".card.clarify.resolved").length === 2);
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe('You answered: "canary first".');
    await expectNoSidewaysScroll();
  });

  it("keeps long words, code and pictures within the width", async () => {
    await send(`A long word: ${"x".repeat(300)} and a path /${"very/long/".repeat(30)}`);
    await settled();
    // The simulator echoes it (up to 80 characters) as inline code in its Markdown answer: 68 unbroken characters.
    await send(`\`${"code".repeat(17)}\``);
    await settled();
    expect(await page.textContent(`${lastAssistant} >> code`)).toMatch(/^(code)+$/);
    await expectNoSidewaysScroll();
    await send("/sim image");
    const img = page.locator('.attachment.outbound img[alt="pheby-image.png"]');
    await page.waitForFunction(
      () =>
        (document.querySelector(".attachment.outbound img") as HTMLImageElement | null)?.naturalWidth === 64,
    );
    await settled();
    await expectUsable(img);
    await expectNoSidewaysScroll();
  });
});
