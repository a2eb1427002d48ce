// What the agent did, on a phone (390×844, touch) in real Chromium against a real pheby-server child
// process (the simulator): an edit's diff in its approval card and under its tool pill, a command's
// output, the plan as a checklist, the thinking folded, and the context meter. Nothing may scroll
// sideways and the conversation stays the largest thing on screen. One browser, one page and one
// server; the tests run in order and build on each other.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  expectConversationLargest,
  expectNoSidewaysScroll,
  hasChromium,
  launchChromium,
  openPage,
  PHONE,
  RESULTS,
  runSettled,
  type ServerProcess,
  screenshotIfFailed,
  sendMessage,
  signIn,
  startServer,
  tearDown,
  tempDataDir,
} from "./harness.js";

describe.skipIf(!hasChromium)("the agent's activity in the console on a phone (390×844)", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let problems: string[] = [];
  /** Every frame the page's WebSockets received, raw. */
  const received: string[] = [];
  const shot = (name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`) });
  const send = (text: string) => sendMessage(page, text);
  const settled = () => runSettled(page);
  /** Whether the server's simulator has /sim diff and /sim output (the activity server, merged by the lead). */
  let toolScenarios = false;

  /** Nothing scrolls sideways, and the timeline is the tallest part of the screen. */
  async function expectPhoneLayout(): Promise<void> {
    await expectNoSidewaysScroll(page);
    // The conversation is the largest thing on screen: at least half of it, and more than the rest together.
    await expectConversationLargest(page);
  }

  /** An element is wholly inside the viewport's width. */
  async function expectWithinWidth(selector: string): Promise<void> {
    const box = (await page.locator(selector).first().boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.viewport.width);
  }

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    browser = await launchChromium(PHONE);
    ({ page, problems } = await openPage(browser.context, received));
  });

  afterAll(() => tearDown(browser, server, dataDir));

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "activity-failed-");
    expect(problems.splice(0)).toEqual([]);
  });

  it("asks for activity and thoughts, and opens a conversation", async () => {
    await signIn(page, server);
    await page.click('[data-testid="drawer-toggle"]');
    await page.click('[data-testid="new-conversation"]', { trial: true });
    await page.click('[data-testid="new-conversation"]');
    await page.waitForSelector('[data-testid="message"]');
    const ready = received
      .map((f) => JSON.parse(f) as { type: string; features?: string[] })
      .find((m) => m.type === "ready");
    expect(ready?.features).toEqual(expect.arrayContaining(["activity", "thoughts"]));
    // No usage known yet: no meter (the simulator reports it after each turn).
    expect(await page.locator('[data-testid="context-meter"]').isVisible()).toBe(false);
  });

  it("finds out which scenarios this server's simulator has", async () => {
    await send("/sim help");
    await settled();
    toolScenarios = ((await page.textContent(".msg.assistant >> nth=-1")) ?? "").includes("/sim diff");
    if (!toolScenarios)
      console.warn("activity e2e: the simulator has no /sim diff yet; the diff and output tests are skipped");
  });

  it("shows an edit's diff in its approval card, readable at 390 px, and under its tool pill once approved", async (ctx) => {
    if (!toolScenarios) ctx.skip();
    await send("/sim diff");
    const card = page.locator(".card.approval.open");
    await card.waitFor();
    const diff = card.locator(".diff");
    await diff.waitFor();
    // A unified diff: its file, +/- counts, and coloured added and removed lines.
    expect(await diff.locator(".diff-path").textContent()).toBeTruthy();
    expect(await diff.locator(".diff-stat").textContent()).toMatch(/^\+\d+ −\d+$/);
    expect(await diff.locator(".dl.add").count()).toBeGreaterThan(0);
    expect(await diff.locator(".dl.del").count()).toBeGreaterThan(0);
    expect(await diff.locator(".dl.hunk").first().textContent()).toMatch(/^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/);
    const colours = await diff.evaluate((d) => ({
      add: getComputedStyle(d.querySelector(".dl.add")!).backgroundColor,
      del: getComputedStyle(d.querySelector(".dl.del")!).backgroundColor,
    }));
    expect(colours.add).not.toBe(colours.del);
    // No server path reaches the page.
    expect(await diff.textContent()).not.toContain(dataDir);
    await expectWithinWidth(".card.approval.open .diff");
    await expectPhoneLayout();
    await shot("phone-approval-diff");

    await card.locator('button[data-choice="once"]').click();
    await page.waitForSelector('.card.approval.resolved .card-status:has-text("Answered: Allow once")');
    await settled();
    // The edit's tool call carries the same diff under its pill.
    const detail = page.locator(".tool-detail .diff").last();
    await detail.waitFor();
    expect(await detail.locator(".dl.add").count()).toBeGreaterThan(0);
    await expectPhoneLayout();
  });

  it("collapses a long diff behind Show all", async () => {
    const diffs = page.locator(".diff:has(.show-all)");
    if ((await diffs.count()) === 0) return; // The scenario's diff is short: nothing to collapse.
    const diff = diffs.last();
    const shown = await diff.locator(".dl").count();
    await diff.locator(".show-all").click();
    expect(await diff.locator(".dl").count()).toBeGreaterThan(shown);
    await expectPhoneLayout();
  });

  it("folds a command's output in a scrollable box, its secret redacted", async (ctx) => {
    if (!toolScenarios) ctx.skip();
    await send("/sim output");
    await settled();
    const output = page.locator(".tool-detail details.output").last();
    await output.waitFor();
    expect(await output.getAttribute("open")).toBeNull();
    await output.locator("summary").click();
    const pre = output.locator("pre");
    await pre.waitFor();
    expect(await pre.textContent()).toContain("[REDACTED]");
    expect(await pre.evaluate((el) => getComputedStyle(el).overflowY)).toBe("auto");
    await expectWithinWidth(".tool-detail details.output pre >> nth=-1");
    await expectPhoneLayout();
  });

  it("shows the plan as a checklist that advances", async () => {
    await send("/sim plan");
    const plan = page.locator('[data-testid="plan"]').last();
    await plan.waitFor();
    await settled();
    const items = await plan
      .locator(".checklist li")
      .evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.status));
    expect(items.length).toBeGreaterThan(1);
    for (const status of items) expect(["pending", "in_progress", "completed"]).toContain(status);
    // It advanced: by the end some entry is done, and the summary counts them.
    expect(items).toContain("completed");
    const done = items.filter((s) => s === "completed").length;
    expect(await plan.locator("summary").textContent()).toBe(`Plan · ${done}/${items.length} done`);
    // One plan per run, updated in place.
    expect(await page.locator('[data-testid="plan"]').count()).toBe(1);
    await expectWithinWidth('[data-testid="plan"]');
    await expectPhoneLayout();
    await shot("phone-plan");
  });

  it("folds the thinking before the answer, streamed into one block per thought", async () => {
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { __thoughts: string[] }).__thoughts = seen;
      new MutationObserver(() => {
        const texts = document.querySelectorAll(".thought .thought-text");
        const text = texts[texts.length - 1]?.textContent ?? "";
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document.querySelector('[data-testid="timeline"]')!, {
        subtree: true,
        childList: true,
        characterData: true,
      });
    });
    await send("/sim think");
    const thought = page.locator(".thought").last();
    await thought.waitFor();
    await settled();
    const details = thought.locator("details");
    // Folded: the summary says Thinking, the text is there but not shown until opened.
    expect(await details.getAttribute("open")).toBeNull();
    expect(await thought.locator("summary").textContent()).toBe("Thinking");
    expect(await thought.locator(".thought-text").isVisible()).toBe(false);
    await thought.locator("summary").click();
    expect(await thought.locator(".thought-text").isVisible()).toBe(true);
    const text = (await thought.locator(".thought-text").textContent())!;
    expect(text.length).toBeGreaterThan(0);
    // Streamed: every text the block showed was a prefix of the final thought.
    const texts = await page.evaluate(() => (window as unknown as { __thoughts: string[] }).__thoughts);
    expect(texts.at(-1)).toBe(text);
    for (const t of texts) expect(text.startsWith(t)).toBe(true);
    // The thinking reads before the answer it led to.
    expect(
      await page.evaluate(() => {
        const thought = [...document.querySelectorAll(".thought")].at(-1)!;
        const answer = [...document.querySelectorAll(".msg.assistant")].at(-1)!;
        return Boolean(thought.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING);
      }),
    ).toBe(true);
    await expectPhoneLayout();
    await shot("phone-thinking");
  });

  it("shows a small context meter in the header: used/size", async () => {
    const meter = page.locator('[data-testid="context-meter"]');
    await meter.waitFor();
    const used = Number(await meter.getAttribute("data-used"));
    const size = Number(await meter.getAttribute("data-size"));
    expect(used).toBeGreaterThan(0);
    expect(size).toBeGreaterThanOrEqual(used);
    expect(await meter.textContent()).toMatch(/^ [\d.]+[kM]?\/[\d.]+[kM]?( · .+)?$/);
    expect(await meter.locator("meter").getAttribute("value")).toBe(String(used));
    // Small: one line of the header.
    const box = (await meter.boundingBox())!;
    expect(box.height).toBeLessThanOrEqual(24);
    await expectWithinWidth('[data-testid="context-meter"]');
    await expectPhoneLayout();
  });

  it("shows the same after a reload, from the conversation.open snapshot", async () => {
    await page.reload();
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    await page.click('[data-testid="drawer-toggle"]');
    await page.locator('[data-testid="conversation-list"] li .open').first().click();
    await page.locator('[data-testid="context-meter"]').waitFor();
    // The last run's tool detail and the latest plan come back with the snapshot.
    await page.locator('[data-testid="plan"] .checklist li').first().waitFor();
    await expectPhoneLayout();
  });
});
