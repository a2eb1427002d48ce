// Push notifications in the console, in real Chromium against a real pheby-server child process and
// a local receiver that decrypts. Chromium has no push service here (offline), so the page's
// PushManager is stubbed to hand out the receiver's endpoint and keys; the Service Worker registration,
// the console, the server's encryption and delivery are all real.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PhebyClient } from "@pheby/client";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type PushReceiver,
  type ReceiverEndpoint,
  startReceiver,
} from "../../../../packages/conformance/src/push-receiver.js";
import {
  hasChromium,
  launchChromium,
  openPage,
  RESULTS,
  runSettled,
  SECRET,
  type ServerProcess,
  screenshotIfFailed,
  startServer,
  tearDown,
  tempDataDir,
} from "./harness.js";

describe.skipIf(!hasChromium)("push notifications in the console (stubbed PushManager)", () => {
  let dataDir: string;
  let server: ServerProcess;
  let receiver: PushReceiver;
  let browserEndpoint: ReceiverEndpoint;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let other: PhebyClient;
  let problems: string[] = [];
  const rows = '[data-testid="push-list"] li[data-subscription-id]';

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    receiver = await startReceiver();
    browserEndpoint = receiver.endpoint("chromium");
    // The receiver is on loopback, which the server refuses unless told otherwise (SSRF rule).
    server = await startServer(dataDir, 0, { PHEBY_PUSH_ALLOW_PRIVATE: "true" });
    browser = await launchChromium();
    ({ page, problems } = await openPage(browser.context));
    await page.addInitScript(
      (stub: { endpoint: string; keys: { p256dh: string; auth: string } }) => {
        const subscription = {
          endpoint: stub.endpoint,
          expirationTime: null,
          toJSON: () => ({ endpoint: stub.endpoint, expirationTime: null, keys: stub.keys }),
          unsubscribe: async () => true,
        };
        PushManager.prototype.subscribe = async (options?: PushSubscriptionOptionsInit) => {
          const key = new Uint8Array(options?.applicationServerKey as ArrayBuffer);
          (window as unknown as { subscribedWith: string }).subscribedWith = btoa(String.fromCharCode(...key))
            .replace(/\+/g, "-")
            .replace(/\//g, "_")
            .replace(/=+$/, "");
          return subscription as unknown as PushSubscription;
        };
      },
      { endpoint: browserEndpoint.endpoint, keys: browserEndpoint.keys },
    );
    other = new PhebyClient({ url: `ws://127.0.0.1:${server.port}/ws`, secret: SECRET, reconnect: false });
    await other.connect();
  });

  afterAll(async () => {
    other?.close();
    await tearDown(browser, server, dataDir);
    await receiver?.close();
  });

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "push-failed-");
    expect(problems.splice(0)).toEqual([]);
    expect(receiver.errors).toEqual([]);
  });

  it("subscribes this browser through its Service Worker with the server's VAPID key", async () => {
    await page.goto(`${server.url}/console/`);
    await page.fill('[data-testid="secret"]', SECRET);
    await page.click('[data-testid="connect"]');
    await page.waitForSelector('[data-testid="status"][data-state="open"]');
    await page.click('[data-testid="push-toggle"]');
    await page.waitForSelector('[data-testid="push-list"] li.empty');
    expect(await page.isEnabled('[data-testid="push-subscribe"]')).toBe(true);

    await page.click('[data-testid="push-subscribe"]');
    const row = await page.waitForSelector(rows);
    expect(await row.textContent()).toContain(receiver.url);
    const registered = await page.evaluate(
      async () => (await navigator.serviceWorker.getRegistration())?.scope,
    );
    expect(registered).toBe(`${server.url}/console/`);
    expect(await page.evaluate(() => (window as unknown as { subscribedWith: string }).subscribedWith)).toBe(
      other.vapidPublicKey,
    );
    expect(await other.listPush()).toMatchObject([{ endpoint_origin: receiver.url }]);
    await page.screenshot({ path: join(RESULTS, "push-panel.png") });
  });

  it("tests a subscription from the list: the receiver decrypts the test push", async () => {
    await page.click('[data-testid="push-test"]');
    await page.waitForSelector('[data-testid="banner"]:has-text("Test notification sent.")');
    expect((await browserEndpoint.next()).payload).toMatchObject({ kind: "test" });
  });

  it("says it is looking at a conversation: its runs are not pushed; another conversation's are", async () => {
    await page.click('[data-testid="new-conversation"]');
    const selected = await page.waitForSelector('[data-testid="conversation-list"] li.selected');
    const watched = (await selected.getAttribute("data-conversation-id"))!;
    // The page says `presence` on its socket before `conversation.open`; once the conversation is
    // shown (its settings load after the snapshot), the server has read the presence too.
    await page.waitForSelector('[data-testid="settings"]:not([hidden])');
    const quiet = await other.request({ type: "chat.send", conversation_id: watched, text: "hello" });
    await other.next("run.finished", (m) => m.run_id === quiet.run_id);
    await runSettled(page);
    const away = await other.request({ type: "conversation.create", name: "Elsewhere" });
    const loud = await other.request({
      type: "chat.send",
      conversation_id: away.conversation_id,
      text: "hi",
    });
    const pushed = await browserEndpoint.next();
    expect(pushed.payload).toMatchObject({
      kind: "run_finished",
      run_id: loud.run_id,
      conversation_name: "Elsewhere",
    });
    // Nothing arrived for the watched conversation in between.
    expect(browserEndpoint.received.map((p) => p.payload.kind)).toEqual(["test", "run_finished"]);
  });

  it("removes the subscription", async () => {
    await page.click('[data-testid="push-remove"]');
    await page.waitForSelector('[data-testid="push-list"] li.empty');
    expect(await other.listPush()).toEqual([]);
  });
});
