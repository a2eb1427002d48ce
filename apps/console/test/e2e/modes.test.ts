// The agent's modes and slash commands (the `modes` extension) in the console, on a phone (390×844,
// touch) in real Chromium against a real pheby-server child process whose agent is the simulator: the
// mode picker lists the simulator's modes and follows a change made here or elsewhere, and `/` in the
// message box opens a palette of the simulator's `/sim` commands. The conversation stays the largest
// thing on screen. One browser, one page and one server; the tests run in order and build on each other.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PhebyClient } from "@pheby/client";
import type { ServerMessageOf } from "@pheby/protocol";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  expectNoSidewaysScroll as expectPageFits,
  expectConversationLargest as expectTimelineLargest,
  hasChromium,
  helloFeatures,
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

describe.skipIf(!hasChromium)("web console: agent modes and commands on a phone (390×844)", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  /** Another client: what the server says, and changes made elsewhere. */
  let other: PhebyClient;
  let conversationId: string;
  let modes: ServerMessageOf<"modes.snapshot">;
  let commands: ServerMessageOf<"commands.snapshot">["commands"];
  let problems: string[] = [];
  const shot = (name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`) });
  const picker = '[data-testid="mode"]';
  const message = '[data-testid="message"]';
  const palette = '[data-testid="palette"]';

  /** The page is no wider than the viewport: nothing scrolls sideways. */
  const expectNoSidewaysScroll = () => expectPageFits(page);
  /** The timeline is taller than the header, the conversation's head and the composer together. */
  const expectConversationLargest = () => expectTimelineLargest(page, '[data-testid="timeline"]', 0.4);

  /** The mode the picker shows, by ID. */
  const shownMode = () => page.inputValue(picker);

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    browser = await launchChromium(PHONE);
    ({ page, problems } = await openPage(browser.context));
    other = new PhebyClient({ url: `ws://127.0.0.1:${server.port}/ws`, secret: SECRET, reconnect: false });
    await other.connect();
    ({ conversation_id: conversationId } = await other.request({
      type: "conversation.create",
      name: "Modes",
    }));
  });

  afterAll(async () => {
    other?.close();
    await tearDown(browser, server, dataDir);
  });

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "modes-failed-");
    expect(problems.splice(0)).toEqual([]);
  });

  it("asks for modes and lists the simulator's modes in a compact picker by the composer", async () => {
    await page.goto(`${server.url}/console/`);
    const hello = helloFeatures(page);
    await page.fill('[data-testid="secret"]', SECRET);
    await page.click('[data-testid="connect"]');
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    expect(await hello).toContain("modes");

    await page.click('[data-testid="drawer-toggle"]');
    await page.click(`[data-conversation-id="${conversationId}"] .open`);
    await page.waitForSelector("nav.conversations", { state: "hidden" });
    modes = await other.listModes(conversationId);
    expect(modes.modes.length).toBeGreaterThan(1);
    await page.waitForSelector(`${picker}:not([hidden])`);
    const options = await page.locator(`${picker} option:not([disabled])`).evaluateAll((os) =>
      os.map((o) => ({
        id: (o as HTMLOptionElement).value,
        text: o.textContent,
        auto: (o as HTMLElement).dataset.autoApproves === "true",
      })),
    );
    expect(options).toEqual(
      modes.modes.map((m) => ({
        id: m.mode_id,
        text: m.auto_approves ? `${m.name} ⚠` : m.name,
        auto: m.auto_approves,
      })),
    );
    if (modes.current_mode_id !== null) expect(await shownMode()).toBe(modes.current_mode_id);

    // Compact: the picker sits in the composer's row of buttons, inside the viewport, and the
    // conversation stays the largest thing on screen.
    const box = (await page.locator(picker).boundingBox())!;
    const send = (await page.locator('[data-testid="send"]').boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.viewport.width);
    expect(box.height).toBeLessThanOrEqual(send.height + 4);
    expect(Math.abs(box.y + box.height / 2 - (send.y + send.height / 2))).toBeLessThan(send.height);
    await expectConversationLargest();
    await expectNoSidewaysScroll();
    await shot("modes-phone-picker");
  });

  it("switching the mode here reaches the other client; a switch elsewhere shows here", async () => {
    const choose = modes.modes.find((m) => m.mode_id !== modes.current_mode_id && !m.auto_approves)!;
    expect(choose).toBeDefined();
    const heard = other.next(
      "mode.changed",
      (m) => m.conversation_id === conversationId && m.mode_id === choose.mode_id,
    );
    await page.selectOption(picker, choose.mode_id);
    expect((await heard).request_id).toBeUndefined();
    expect((await other.listModes(conversationId)).current_mode_id).toBe(choose.mode_id);
    expect(await shownMode()).toBe(choose.mode_id);

    // Another client picks a mode in which the agent approves by itself: the picker follows and warns.
    const auto = modes.modes.find((m) => m.auto_approves) ?? modes.modes.find((m) => m !== choose)!;
    await other.setMode(conversationId, auto.mode_id);
    await page.waitForFunction(
      ([selector, id]) => (document.querySelector(selector!) as HTMLSelectElement).value === id,
      [picker, auto.mode_id],
    );
    expect(await page.locator(picker).evaluate((el) => el.classList.contains("auto-approves"))).toBe(
      auto.auto_approves,
    );
    await shot("modes-phone-changed");

    // And back, from here again, so the next tests run in an asking mode.
    await page.selectOption(picker, choose.mode_id);
    await page.waitForFunction(
      ([selector]) => !document.querySelector(selector!)!.classList.contains("auto-approves"),
      [picker],
    );
    await expectNoSidewaysScroll();
  });

  it("the agent leaving a mode by itself (/sim mode leave) shows in the picker", async () => {
    const agentDefault = modes.current_mode_id ?? modes.modes[0]!.mode_id;
    expect(await shownMode()).not.toBe(agentDefault);
    await sendMessage(page, "/sim mode leave");
    await runSettled(page);
    await page.waitForFunction(
      ([selector, id]) => (document.querySelector(selector!) as HTMLSelectElement).value === id,
      [picker, agentDefault],
    );
    expect(await page.textContent(".msg.assistant >> nth=-1")).toContain("by myself");
  });

  it("'/' in the message box opens a palette of the simulator's /sim commands, filtered as you type", async () => {
    commands = await other.listCommands(conversationId);
    expect(commands.length).toBeGreaterThan(0);
    expect(commands.every((c) => c.name.startsWith("sim"))).toBe(true);
    expect(await page.isVisible(palette)).toBe(false);

    await page.click(message);
    await page.keyboard.type("/");
    await page.waitForSelector(`${palette}:not([hidden])`);
    const listed = await page
      .locator(`${palette} [data-testid="command"]`)
      .evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.name));
    expect(listed).toEqual(commands.map((c) => c.name));
    // The palette stays within the phone's width.
    const box = (await page.locator(palette).boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.viewport.width);
    await expectNoSidewaysScroll();
    await shot("modes-phone-palette");

    // Typing filters by the name's start.
    await page.keyboard.type("sim app");
    const filtered = await page
      .locator(`${palette} [data-testid="command"]`)
      .evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.name));
    const expected = commands.filter((c) => `/${c.name}`.startsWith("/sim app")).map((c) => c.name);
    expect(filtered).toEqual(expected);
    expect(filtered.length).toBeGreaterThan(0);

    // Escape closes it; text that is not a command never opens it.
    await page.keyboard.press("Escape");
    await page.waitForSelector(palette, { state: "hidden" });
    await page.fill(message, "hello /sim");
    expect(await page.isVisible(palette)).toBe(false);
  });

  it("choosing a command fills the message box with /name, ready for its arguments, and it runs", async () => {
    await page.fill(message, "");
    await page.click(message);
    await page.keyboard.type("/sim");
    await page.waitForSelector(`${palette}:not([hidden])`);
    // Tap a command: the message box gets `/name ` and keeps the focus.
    const target = commands.find((c) => c.name.startsWith("sim")) ?? commands[0]!;
    await page.locator(`${palette} [data-name="${target.name}"]`).tap();
    expect(await page.inputValue(message)).toBe(`/${target.name} `);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("message");
    await page.waitForSelector(palette, { state: "hidden" });

    // The keyboard way: arrows move the highlight, Enter chooses (and does not send).
    const sent = await page.locator(".msg.user").count();
    await page.fill(message, "");
    await page.keyboard.type("/sim");
    await page.waitForSelector(`${palette}:not([hidden])`);
    const shown = await page
      .locator(`${palette} [data-testid="command"]`)
      .evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.name!));
    const second = shown[1] ?? shown[0]!;
    if (shown.length > 1) await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    expect(await page.inputValue(message)).toBe(`/${second} `);
    expect(await page.locator(".msg.user").count()).toBe(sent);

    // A chosen command is an ordinary message: `/sim help` lists the scenarios.
    await page.fill(message, "");
    await page.keyboard.type("/sim hel");
    const help = commands.find((c) => c.name === "sim help");
    if (help) {
      await page.keyboard.press("Enter");
      expect(await page.inputValue(message)).toBe("/sim help ");
    } else {
      await page.fill(message, "/sim help");
    }
    await page.click('[data-testid="send"]');
    await page.waitForSelector('.msg.user:has-text("/sim help")');
    await runSettled(page);
    expect(await page.inputValue(message)).toBe("");
    expect(await page.isVisible(palette)).toBe(false);
    await expectConversationLargest();
    await expectNoSidewaysScroll();
  });
});
