// What a conversation changed (the `changes` extension) in the console on a phone (390×844, touch),
// in real Chromium against a real pheby-server child process whose agent is the simulator. Its
// working directory is its own git repository under the data directory: `/sim changes` edits,
// creates and deletes a file there, and the test adds a binary file, a file too long to diff whole and
// more files than the list holds. The Changes view lists the files with their status and counts as a
// Node client gets them, shows a file's unified diff, follows `changes.changed`, and says what it
// leaves out. Nothing scrolls sideways and the view is the largest thing on screen. One browser, one
// page and one server; the tests run in order and build on each other.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_FEATURES, PhebyClient } from "@pheby/client";
import { FEATURE_CHANGES, LIMITS, type ServerMessageOf } from "@pheby/protocol";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  expectConversationLargest,
  expectNoSidewaysScroll,
  hasChromium,
  helloFeatures,
  launchChromium,
  makePng,
  openPage,
  PHONE,
  RESULTS,
  runSettled,
  SECRET,
  type ServerProcess,
  screenshotIfFailed,
  sendMessage,
  signIn,
  startServer,
  tearDown,
  tempDataDir,
} from "./harness.js";

type ChangedFile = ServerMessageOf<"changes.snapshot">["files"][number];

describe.skipIf(!hasChromium)("web console: a conversation's changes on a phone (390×844)", () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let problems: string[] = [];
  /** Another client: what the server says the changes are. */
  let other: PhebyClient;
  let conversationId = "";
  const view = '[data-testid="changes"]';
  const toggle = '[data-testid="changes-toggle"]';
  const shot = (name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`) });
  /** The simulator's own repository: its working directory. */
  const repo = () => join(dataDir, "simulator-workspace");
  const listed = () => other.listChanges(conversationId);
  const row = (file: Pick<ChangedFile, "file_id">) => `${view} .changed-file[data-file-id="${file.file_id}"]`;

  /** The rows the page shows: file id, status, path and the counts' text. */
  const rows = () =>
    page.locator(`${view} .changed-file`).evaluateAll((buttons) =>
      buttons.map((b) => ({
        file_id: (b as HTMLElement).dataset.fileId,
        status: (b as HTMLElement).dataset.status,
        path: b.querySelector(".file-path")?.firstChild?.textContent,
        stat: b.querySelector(".file-stat")?.textContent,
      })),
    );
  /** The same, as the page should show what the server listed. */
  const expected = (files: ChangedFile[]) =>
    files.map((f) => ({
      file_id: f.file_id,
      status: f.status,
      path: f.path,
      stat: f.binary ? "binary" : `+${f.additions} −${f.deletions}`,
    }));

  /** A row is wholly inside the phone's width. */
  async function expectWithinWidth(selector: string): Promise<void> {
    const box = (await page.locator(selector).first().boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.viewport.width);
  }

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    other = new PhebyClient({
      url: `ws://127.0.0.1:${server.port}/ws`,
      secret: SECRET,
      reconnect: false,
      features: [...DEFAULT_FEATURES, FEATURE_CHANGES],
    });
    await other.connect();
    browser = await launchChromium(PHONE);
    ({ page, problems } = await openPage(browser.context));
  });

  afterAll(async () => {
    other?.close();
    await tearDown(browser, server, dataDir);
  });

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "changes-failed-");
    expect(problems.splice(0)).toEqual([]);
  });

  it("asks for changes, and shows the totals in the conversation's head after /sim changes", async () => {
    const hello = helloFeatures(page);
    await signIn(page, server);
    expect(await hello).toContain("changes");
    expect(other.features).toContain("changes");
    await page.click('[data-testid="drawer-toggle"]');
    await page.click('[data-testid="new-conversation"]');
    await page.waitForSelector('[data-testid="message"]');
    conversationId = (await page.getAttribute(
      '[data-testid="conversation-list"] li.selected',
      "data-conversation-id",
    ))!;

    const changed = other.next("changes.changed", (m) => m.conversation_id === conversationId);
    await sendMessage(page, "/sim changes");
    await runSettled(page);
    const event = await changed;
    expect([event.file_count, event.additions, event.deletions]).toEqual([3, 5, 2]);
    // The button follows changes.changed: "Changes · 3 +5 −2", one line of the head.
    await page.waitForSelector(`${toggle}[data-files="3"]`);
    expect(await page.textContent(toggle)).toBe("Changes · 3 +5 −2");
    expect((await page.locator(toggle).boundingBox())!.height).toBeLessThanOrEqual(32);
    await expectWithinWidth(toggle);
    await expectConversationLargest(page);
    await expectNoSidewaysScroll(page);
  });

  it("lists the changed files with their status and counts, in the timeline's place", async () => {
    await page.click(toggle);
    await page.waitForSelector(`${view}:not([hidden]) .changed-file`);
    expect(await page.isVisible('[data-testid="timeline"]')).toBe(false);
    const snapshot = await listed();
    expect(snapshot.files.map((f) => [f.path, f.status])).toEqual(
      expect.arrayContaining([
        ["src/app.ts", "modified"],
        ["src/feature.ts", "added"],
        ["docs/old-notes.md", "deleted"],
      ]),
    );
    expect(await rows()).toEqual(expected(snapshot.files));
    expect(await page.textContent('[data-testid="changes-base"]')).toBe(snapshot.base.label);
    for (const file of snapshot.files) await expectWithinWidth(row(file));
    // The message box stays, to ask the agent for more.
    expect(await page.isVisible('[data-testid="message"]')).toBe(true);
    await expectConversationLargest(page, view);
    await expectNoSidewaysScroll(page);
    // No server path reaches the page.
    expect(await page.textContent(view)).not.toContain(dataDir);
    await shot("phone-changes");
  });

  it("shows a file's unified diff, readable at 390 px, and goes back to the list", async () => {
    const app = (await listed()).files.find((f) => f.path === "src/app.ts")!;
    await page.click(row(app));
    const diff = page.locator(`${view} .diff`);
    await diff.waitFor();
    expect(await diff.locator(".diff-path").textContent()).toBe("src/app.ts");
    expect(await diff.locator(".diff-stat").textContent()).toBe("+2 −1");
    expect(await diff.locator(".dl.add").count()).toBe(2);
    expect(await diff.locator(".dl.del").count()).toBe(1);
    expect(await diff.locator(".dl.hunk").first().textContent()).toMatch(/^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/);
    // The lines are the server's patch's, from its first hunk on: git's file header is not shown.
    const { patch } = await other.diffChange(conversationId, app.file_id);
    const lines = patch!.split("\n");
    if (lines.at(-1) === "") lines.pop();
    expect(await diff.locator(".dl").allTextContents()).toEqual(
      lines.slice(lines.findIndex((l) => l.startsWith("@@"))).map((l) => l || " "),
    );
    expect(await diff.textContent()).not.toContain("diff --git");
    await expectWithinWidth(`${view} .diff`);
    await expectConversationLargest(page, view);
    await expectNoSidewaysScroll(page);
    await shot("phone-changes-diff");
    await page.click('[data-testid="changes-files"]');
    await page.waitForSelector(`${view} .changed-file`);
  });

  it("follows changes.changed while open: a binary file, and a patch too long to show whole", async () => {
    writeFileSync(join(repo(), "logo.png"), makePng(32));
    // 300 KiB of changed lines: more than the patch limit.
    writeFileSync(
      join(repo(), "big.txt"),
      Array.from({ length: 6000 }, (_, i) => `line ${i} ${"x".repeat(40)}`).join("\n"),
    );
    // A run's end notices the new fingerprint and says so; the open view lists again.
    const changed = other.next("changes.changed", (m) => m.conversation_id === conversationId);
    await sendMessage(page, "anything new?");
    await runSettled(page);
    expect((await changed).file_count).toBe(5);
    await page.waitForSelector(`${view} .changed-file >> nth=4`);
    const snapshot = await listed();
    expect(await rows()).toEqual(expected(snapshot.files));
    await page.waitForSelector(`${toggle}[data-files="5"]`);

    const logo = snapshot.files.find((f) => f.path === "logo.png")!;
    expect(logo.binary).toBe(true);
    expect(await page.textContent(`${row(logo)} .file-stat`)).toBe("binary");
    await page.click(row(logo));
    await page.waitForSelector('[data-testid="changes-binary"]');
    expect(await page.textContent('[data-testid="changes-binary"]')).toContain("Binary file");
    await page.click('[data-testid="changes-files"]');

    const big = snapshot.files.find((f) => f.path === "big.txt")!;
    await page.click(row(big));
    await page.waitForSelector('[data-testid="changes-patch-truncated"]');
    expect(await page.textContent(`${view} .diff-note`)).toContain("truncated");
    // Long: the rest waits behind Show all, and the page still does not scroll sideways.
    expect(await page.isVisible(`${view} [data-testid="diff-show-all"]`)).toBe(true);
    await expectNoSidewaysScroll(page);
    await page.click('[data-testid="changes-files"]');
  });

  it("says when the list is cut at its limit", async () => {
    const dir = join(repo(), "many");
    mkdirSync(dir);
    for (let i = 0; i < LIMITS.changesFiles; i++) writeFileSync(join(dir, `f${i}.txt`), `${i}\n`);
    await page.click('[data-testid="changes-refresh"]');
    await page.waitForSelector('[data-testid="changes-truncated"]');
    expect(await page.locator(`${view} .changed-file`).count()).toBe(LIMITS.changesFiles);
    expect((await listed()).truncated).toBe(true);
    await expectNoSidewaysScroll(page);
  });

  it("closes back to the chat, follows another device's run, and shows the totals again after a reload", async () => {
    await page.click('[data-testid="changes-close"]');
    await page.waitForSelector(view, { state: "hidden" });
    expect(await page.isVisible('[data-testid="timeline"]')).toBe(true);
    // A run another device started changes one more file: the button follows its changes.changed,
    // whose totals count every file, also past the list's limit.
    writeFileSync(join(repo(), "one-more.txt"), "1\n2\n");
    const changed = other.next("changes.changed", (m) => m.conversation_id === conversationId);
    const { run_id } = await other.request({
      type: "chat.send",
      conversation_id: conversationId,
      text: "hi",
    });
    const event = await changed;
    expect(event.run_id).toBe(run_id);
    expect(event.file_count).toBe(LIMITS.changesFiles + 6);
    await page.waitForSelector(`${toggle}[data-files="${event.file_count}"]`);
    expect(await page.textContent(toggle)).toBe(
      `Changes · ${event.file_count} +${event.additions} −${event.deletions}`,
    );
    await runSettled(page);
    await page.reload();
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    await page.click('[data-testid="drawer-toggle"]');
    await page.click(`[data-conversation-id="${conversationId}"] .open`);
    await page.waitForSelector(`${toggle}[data-files="${LIMITS.changesFiles}"]`);
    expect(await page.textContent(toggle)).toMatch(/^Changes · 1000\+ \+\d+ −\d+$/);
  });
});
