// "Pair a phone" in real Chromium against a real pheby-server child process (with PHEBY_PUBLIC_URL):
// the QR code drawn on the page is read back from the canvas's pixels with jsQR, an independent
// decoder, and must be the pairing URI; the phone pairs with it; the owner revokes it from the
// page; and the console signs in with a device secret. The tests run in order and build on each other.
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { PhebyClient, pairDevice } from "@pheby/client";
import { FEATURE_DEVICES } from "@pheby/protocol";
import jsQR from "jsqr";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  clickToConfirm,
  hasChromium,
  launchChromium,
  openPage,
  RESULTS,
  SECRET,
  type ServerProcess,
  screenshotIfFailed,
  startServer,
  tearDown,
  tempDataDir,
} from "./harness.js";

/** A port nothing listens on right now, so the public URL can be known before the server starts. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe.skipIf(!hasChromium)("web console: pairing and devices in Chromium", () => {
  let dataDir: string;
  let server: ServerProcess;
  let publicUrl: string;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let owner: PhebyClient;
  let problems: string[] = [];
  const shot = (name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`) });
  const waitStatus = (state: string) =>
    page.waitForSelector(`[data-testid="status"][data-state="${state}"]`, { timeout: 15_000 });

  async function signIn(secret: string): Promise<void> {
    await page.goto(`${server.url}/console/`);
    await page.fill('[data-testid="secret"]', secret);
    await page.click('[data-testid="connect"]');
    await waitStatus("open");
  }

  /** The QR code on the page, read from the canvas's pixels. */
  async function readQr(): Promise<string | undefined> {
    const image = await page.evaluate(() => {
      const canvas = document.querySelector<HTMLCanvasElement>('[data-testid="pair-qr"]')!;
      const pixels = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height);
      return { width: pixels.width, height: pixels.height, data: Array.from(pixels.data) };
    });
    const data = Uint8ClampedArray.from(image.data);
    return jsQR(data, image.width, image.height, { inversionAttempts: "dontInvert" })?.data;
  }

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    const port = await freePort();
    publicUrl = `ws://127.0.0.1:${port}/ws`;
    server = await startServer(dataDir, port, { PHEBY_PUBLIC_URL: publicUrl });
    browser = await launchChromium();
    ({ page, problems } = await openPage(browser.context));
    owner = new PhebyClient({
      url: publicUrl,
      secret: SECRET,
      reconnect: false,
      features: [FEATURE_DEVICES],
    });
    await owner.connect();
  });

  afterAll(async () => {
    owner?.close();
    await tearDown(browser, server, dataDir);
  });

  afterEach(async (ctx) => {
    await screenshotIfFailed(page, ctx.task, "devices-failed-");
    expect(problems.splice(0)).toEqual([]);
  });

  it("draws a QR code that decodes to the pairing URI, and a phone pairs with it", async () => {
    await signIn(SECRET);
    await page.click('[data-testid="devices"]');
    await page.waitForSelector('[data-testid="device-list"]:has-text("No paired devices.")');
    await page.fill('[data-testid="pair-name"]', "Browser-paired phone");
    await page.click('[data-testid="pair"]');
    await page.waitForSelector('[data-testid="pair-qr"]');
    const shown = (await page.textContent('[data-testid="pair-uri"]'))!;
    expect(shown).toMatch(/^pheby:\/\/pair\?url=/);
    expect(new URL(shown).searchParams.get("url")).toBe(publicUrl);
    expect(await readQr()).toBe(shown);
    await shot("devices-pair");

    const phone = await pairDevice((await readQr())!, { deviceName: "Pixel 9" });
    expect(phone.url).toBe(publicUrl);
    // Reopening the panel lists it, with the name given on the page.
    await page.click('[data-testid="devices"]');
    const row = `[data-device-id="${phone.deviceId}"]`;
    await page.waitForSelector(`${row}:has-text("Browser-paired phone"):has-text("never seen")`);

    // Revoke from the page (two clicks): the phone's live connection is closed (4401: auth failed).
    const live = new PhebyClient({ url: publicUrl, secret: phone.deviceSecret, reconnect: false });
    await live.connect();
    const cutOff = new Promise<string>((resolve) =>
      live.onState((state) => state === "failed" && resolve(state)),
    );
    await clickToConfirm(page, `${row} [data-testid="revoke"]`);
    expect(await cutOff).toBe("failed");
    await page.waitForSelector('[data-testid="device-list"]:has-text("No paired devices.")');
  });

  it("signs in with a device secret, says only the owner manages devices, and leaves when revoked", async () => {
    const { uri } = await owner.createPairing("Console on a device");
    const device = await pairDevice(uri);
    await page.click("text=Sign out");
    await signIn(device.deviceSecret);
    await page.click('[data-testid="devices"]');
    await page.waitForSelector('[data-testid="devices-note"]:has-text("signed in with a device secret")');
    expect(await page.isVisible('[data-testid="pair"]')).toBe(false);
    await shot("devices-as-device");

    await owner.revokeDevice(device.deviceId);
    await page.waitForSelector('[data-testid="connect-error"]:has-text("no longer accepts this secret")');
    expect(await page.evaluate(() => sessionStorage.getItem("pheby.secret"))).toBeNull();
  });
});
