// The console in real Chromium against a real pheby-server child process
// (simulator backend, console served at /console/). One browser, one page and
// one server for the whole file; the tests run in order and build on each other.
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PhebyClient } from "@pheby/client";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  CHROMIUM,
  clickToConfirm,
  hasChromium,
  launchChromium,
  makePng,
  openPage,
  RESULTS,
  runSettled,
  SECRET,
  type ServerProcess,
  sendMessage,
  startProxy,
  startServer,
  startStaticHost,
  tempDataDir,
} from "./harness.js";

if (!hasChromium)
  console.warn(
    `console e2e: no Chromium at ${CHROMIUM}; skipping the browser tests (apt-get install chromium, or set PHEBY_CHROMIUM)`,
  );

const REPLY_TAIL =
  'This is the Pheby simulator, streaming a deterministic reply word by word with no LLM involved. Send "/sim help" to see the scenarios.';

describe.skipIf(!hasChromium)("web console in Chromium", () => {
  let dataDir: string;
  let server: ServerProcess;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let other: PhebyClient;
  /** Uncaught page errors and CSP violations: any of them fails the test in which it happened. */
  let problems: string[] = [];

  // The page reaches the server through a proxy a test can cut; the Node client goes direct.
  const pageUrl = () => `http://127.0.0.1:${proxy.port}/console/`;
  const pageWsUrl = () => `ws://127.0.0.1:${proxy.port}/ws`;
  const shot = (name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`) });
  const status = () => page.getAttribute('[data-testid="status"]', "data-state");
  const waitStatus = (state: string, timeout = 15_000) =>
    page.waitForSelector(`[data-testid="status"][data-state="${state}"]`, { timeout });
  const lastAssistant = ".msg.assistant >> nth=-1";

  const send = (text: string) => sendMessage(page, text);
  const settled = () => runSettled(page);

  /** Every frame the page's WebSockets received, raw. */
  const received: string[] = [];

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    dataDir = tempDataDir();
    server = await startServer(dataDir);
    proxy = await startProxy(() => server.port);
    browser = await launchChromium();
    // Fails at the step that hangs, well before the test's own timeout.
    ({ page, problems } = await openPage(browser.context, received));
    other = new PhebyClient({ url: `ws://127.0.0.1:${server.port}/ws`, secret: SECRET, reconnect: false });
    await other.connect();
  });

  afterAll(async () => {
    other?.close();
    await browser?.close();
    await proxy?.close();
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  afterEach(async (ctx) => {
    // On failure, keep what the user would have seen: a screenshot and the console's banner.
    if (ctx.task.result?.state === "fail") {
      const name = ctx.task.name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60);
      await page.screenshot({ path: join(RESULTS, `failed-${name}.png`) }).catch(() => undefined);
      const banner = await page.textContent('[data-testid="banner"]').catch(() => null);
      if (banner) console.error(`console banner: ${banner}`);
    }
    const seen = problems.splice(0);
    expect(seen).toEqual([]);
  });

  it("connects with a wrong and then the right secret, keeping the secret out of the URL and localStorage", async () => {
    await page.goto(pageUrl());
    expect(await page.inputValue('[data-testid="url"]')).toBe(pageWsUrl());
    await page.fill('[data-testid="secret"]', "this-is-not-the-secret");
    await page.click('[data-testid="connect"]');
    await waitStatus("failed");
    await page.waitForSelector('[data-testid="connect-error"]:has-text("Wrong secret")');
    expect(await page.evaluate(() => sessionStorage.getItem("pheby.secret"))).toBeNull();
    await shot("connect-auth-failed");

    await page.fill('[data-testid="secret"]', SECRET);
    await page.click('[data-testid="connect"]');
    await waitStatus("open");
    expect(await page.textContent('[data-testid="status"]')).toBe("connected");
    expect(page.url()).toBe(pageUrl());
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem("pheby.secret"),
      local: JSON.stringify({ ...localStorage }),
    }));
    expect(storage.session).toBe(SECRET);
    expect(storage.local).not.toContain(SECRET);
  });

  it("creates, renames and deletes conversations, with live updates from another client", async () => {
    await page.click('[data-testid="new-conversation"]');
    const mine = await page.waitForSelector('[data-testid="conversation-list"] li.selected');
    const mineId = (await mine.getAttribute("data-conversation-id"))!;
    await page.waitForSelector('[data-testid="message"]');

    // Live: another client creates and renames one.
    const created = await other.request({ type: "conversation.create", name: "From elsewhere" });
    const row = `[data-conversation-id="${created.conversation_id}"]`;
    await page.waitForSelector(`${row} .open:has-text("From elsewhere")`);
    await other.request({
      type: "conversation.rename",
      conversation_id: created.conversation_id,
      name: "Renamed elsewhere",
    });
    await page.waitForSelector(`${row} .open:has-text("Renamed elsewhere")`);

    // Rename ours from the console; the other client hears it.
    const heard = other.next("conversation.renamed", (m) => m.conversation_id === mineId);
    await page.click(`[data-conversation-id="${mineId}"] button[title="Rename"]`);
    await page.fill(`[data-conversation-id="${mineId}"] input`, "Console chat");
    await page.press(`[data-conversation-id="${mineId}"] input`, "Enter");
    expect((await heard).name).toBe("Console chat");
    await page.waitForSelector('[data-testid="conversation-title"]:has-text("Console chat")');

    // Delete the other one from the console (two clicks); the other client hears it.
    const deleted = other.next("conversation.deleted", (m) => m.conversation_id === created.conversation_id);
    await clickToConfirm(page, `${row} button[title="Delete"]`);
    await deleted;
    await page.waitForSelector(row, { state: "detached" });
  });

  it("streams a reply, replacing the bubble text on each delta, rendered as Markdown", async () => {
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { __texts: string[] }).__texts = seen;
      new MutationObserver(() => {
        const bubbles = document.querySelectorAll(".msg.assistant .text");
        const text = bubbles[bubbles.length - 1]?.textContent ?? "";
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document.querySelector('[data-testid="timeline"]')!, {
        subtree: true,
        childList: true,
        characterData: true,
      });
    });
    await send("Hello **console**");
    await page.waitForSelector('.msg.user:has-text("Hello **console**")');
    await settled();
    const final = (await page.textContent(`${lastAssistant} >> .text`))!;
    expect(final.startsWith(`You said: "Hello console". ${REPLY_TAIL}`)).toBe(true);
    expect(await page.textContent(`${lastAssistant} >> strong`)).toBe("console");
    const texts = await page.evaluate(() => (window as unknown as { __texts: string[] }).__texts);
    // Several partial texts, each a prefix of the final one: the bubble was replaced, not appended to.
    expect(texts.length).toBeGreaterThanOrEqual(3);
    expect(texts.at(-1)).toBe(final);
    for (const t of texts) expect(final.startsWith(t)).toBe(true);
    // The console asked for append deltas (and resume, queue, expiry, push, schedules, devices, activity,
    // modes, thoughts, inbox, workspaces and changes, for its panels, list, reconnects and the agent's
    // work, in the client's FEATURE_PRIORITY order) and got them: the bubble texts above were stitched.
    const frames = received.map(
      (f) => JSON.parse(f) as { type: string; features?: string[]; offset?: number },
    );
    expect(frames.filter((m) => m.type === "ready").at(-1)?.features).toEqual([
      "delta.append",
      "resume",
      "queue",
      "expiry",
      "push",
      "schedules",
      "devices",
      "activity",
      "modes",
      "thoughts",
      "inbox",
      "workspaces",
      "changes",
    ]);
    expect(frames.filter((m) => m.type === "message.delta" && (m.offset ?? 0) > 0).length).toBeGreaterThan(0);
    await shot("chat-streamed");
  });

  it("renders hostile agent text inert: no element, handler, script or javascript: link runs", async () => {
    const payloads = [
      "<img src=x onerror=self.pwned=1><script>self.pwned=2</script>",
      "[a](javascript:self.pwned=3) <svg onload=self.pwned=4> <a href=x>b</a>",
      "`<b>code</b>` ![i](https://127.0.0.1:9/x.png) <iframe src=javascript:1>",
    ];
    for (const p of payloads) {
      await send(p);
      await settled();
      // The simulator echoed the payload into the assistant's Markdown.
      expect(await page.textContent(`${lastAssistant} >> .text`)).toContain("You said:");
    }
    const report = await page.evaluate(() => {
      const timeline = document.querySelector('[data-testid="timeline"]')!;
      const assistant = [...timeline.querySelectorAll(".msg.assistant .text")].map((e) => e.textContent);
      return {
        xss: (window as unknown as { pwned?: number }).pwned ?? null,
        dangerous: [...timeline.querySelectorAll("img, script, svg, iframe, object, embed, b, style")].map(
          (e) => e.outerHTML,
        ),
        hrefs: [...timeline.querySelectorAll("a")].map((a) => a.getAttribute("href")),
        handlers: [...timeline.querySelectorAll("*")].flatMap((e) =>
          [...e.attributes].filter((a) => a.name.startsWith("on")).map((a) => a.name),
        ),
        assistant: assistant.join("\n"),
      };
    });
    expect(report.xss).toBeNull();
    expect(report.dangerous).toEqual([]);
    expect(report.handlers).toEqual([]);
    expect(report.hrefs).toEqual(["https://127.0.0.1:9/x.png"]);
    // The hostile markup reached the assistant's bubbles, shown as literal text.
    expect(report.assistant).toContain(
      'You said: "<img src=x onerror=self.pwned=1><script>self.pwned=2</script>"',
    );
    expect(report.assistant).toContain(
      "[a](javascript:self.pwned=3) <svg onload=self.pwned=4> <a href=x>b</a>",
    );
    expect(await page.textContent(`${lastAssistant} >> code`)).toBe("<b>code</b>");
  });

  it("shows /sim tools as pills keyed by tool_call_id", async () => {
    await send("/sim tools");
    await settled();
    const tools = await page.evaluate(() => {
      const bubbles = document.querySelectorAll(".msg.assistant");
      const last = bubbles[bubbles.length - 1]!;
      return [...last.querySelectorAll(".pill")].map((p) => ({
        id: (p as HTMLElement).dataset.toolCallId,
        status: (p as HTMLElement).dataset.status,
        text: p.textContent,
        title: p.getAttribute("title"),
      }));
    });
    expect(tools).toHaveLength(2);
    expect(new Set(tools.map((t) => t.id)).size).toBe(2);
    expect(tools[0]).toMatchObject({ status: "completed" });
    expect(tools[0]!.text).toMatch(/^web_search · completed/);
    expect(tools[0]!.title).toContain("[REDACTED]");
    expect(tools[1]).toMatchObject({ status: "failed" });
    expect(tools[1]!.text).toContain("read_file · failed");
    expect(tools[1]!.text).toContain("Permission denied (simulated)");
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe(
      "I ran two tools: web_search completed and read_file failed.",
    );
  });

  it("shows a notice in the notice style, apart from the answer", async () => {
    await send("/sim notice");
    await settled();
    const notice = await page.waitForSelector(".notice:has-text('Simulated notice')");
    expect(await notice.getAttribute("role")).toBe("status");
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe(
      "This is the answer that follows the notice.",
    );
    // The notice came first, so it reads before the answer it precedes.
    expect(
      await page.evaluate(() => {
        const notices = document.querySelectorAll(".notice");
        const answers = document.querySelectorAll(".msg.assistant");
        const notice = notices[notices.length - 1]!;
        const answer = answers[answers.length - 1]!;
        return Boolean(notice.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING);
      }),
    ).toBe(true);
    await shot("chat-tools-notice");
  });

  it("stops /sim slow with the stop button (run.cancel)", async () => {
    await send("/sim slow");
    await page.waitForSelector('[data-testid="stop"]', { state: "visible" });
    await page.waitForFunction(() => {
      const b = document.querySelectorAll(".msg.assistant .text");
      return (b[b.length - 1]?.textContent ?? "").includes("word3");
    });
    await page.click('[data-testid="stop"]');
    await page.waitForSelector(`${lastAssistant} >> [data-run-status="cancelled"]`);
    await page.waitForSelector('[data-testid="stop"]', { state: "hidden" });
    expect(await page.textContent(`${lastAssistant} >> .text`)).not.toContain("word200");
    await shot("chat-cancelled");
  });

  it("answers /sim approval by clicking a choice", async () => {
    await send("/sim approval");
    const card = ".card.approval.open";
    await page.waitForSelector(card);
    expect(await page.$$eval(`${card} button`, (bs) => bs.map((b) => b.getAttribute("data-choice")))).toEqual(
      ["once", "session", "always", "deny"],
    );
    expect(await page.textContent(`${card} code`)).toBe("rm -rf /tmp/pheby-sim-build");
    await shot("approval");
    await page.click(`${card} button[data-choice="once"]`);
    await page.waitForSelector('.card.approval.resolved .card-status:has-text("Answered: Allow once")');
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe(
      "Approved (once): I ran rm -rf /tmp/pheby-sim-build.",
    );
    // Where it happened: the tool asked, the card was answered, then the answer followed.
    const around = await page.evaluate(() => {
      const card = [...document.querySelectorAll(".card.approval")].at(-1)!;
      const [before, after] = [card.previousElementSibling!, card.nextElementSibling!];
      return {
        before: {
          pill: before.querySelector<HTMLElement>(".pill")?.dataset.status,
          text: before.querySelector(".text")?.textContent,
        },
        after: {
          pills: after.querySelectorAll(".pill").length,
          text: after.querySelector(".text")?.textContent,
        },
      };
    });
    expect(around).toEqual({
      before: { pill: "completed", text: "" },
      after: { pills: 0, text: "Approved (once): I ran rm -rf /tmp/pheby-sim-build." },
    });
  });

  it("answers /sim clarify with free text in the Other field", async () => {
    await send("/sim clarify");
    const card = ".card.clarify.open";
    await page.waitForSelector(card);
    expect(await page.textContent(`${card} p`)).toBe("Deploy to staging or production?");
    expect(await page.$$eval(`${card} .choices button`, (bs) => bs.map((b) => b.textContent))).toEqual([
      "staging",
      "production",
    ]);
    await page.fill(`${card} input[name="other"]`, "canary first, then production");
    await shot("clarify");
    await page.press(`${card} input[name="other"]`, "Enter");
    await page.waitForSelector('.card.clarify.resolved .card-status:has-text("Answered.")');
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe(
      'You answered: "canary first, then production".',
    );
  });

  it("counts down a question that expires (/sim timeout), and says it expired", async () => {
    await send("/sim timeout");
    const card = ".card.approval.open";
    await page.waitForSelector(`${card} [data-testid="expiry"]`);
    expect(await page.textContent(`${card} [data-testid="expiry"]`)).toMatch(/^Expires in [45] s$/);
    await shot("approval-expiring");
    await page.waitForSelector('.card.approval.resolved .card-status:has-text("Expired unanswered.")', {
      timeout: 15_000,
    });
    await page.waitForSelector(".notice:has-text('The approval expired unanswered')");
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe(
      "The approval timed out and was withdrawn, so nothing ran.",
    );
  });

  it("schedules a prompt in the open conversation; it runs at its time, is listed with its outcome, and can be deleted", async () => {
    await page.click('[data-testid="schedules"] summary');
    await page.fill('[data-testid="schedule-prompt"]', "/sim notice");
    await page.selectOption('[data-testid="schedule-kind"]', "at");
    // datetime-local takes this browser's local time, without an offset.
    const local = await page.evaluate(() => {
      const d = new Date(Date.now() + 3_000);
      const pad = (n: number) => String(n).padStart(2, "0");
      return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    });
    await page.fill('[data-testid="schedule-at"]', local);
    const answers = await page.$$eval(".msg.assistant", (els) => els.length);
    await page.click('[data-testid="schedule-add"]');
    await page.waitForSelector('[data-testid="schedule-list"] li[data-enabled="true"]');
    expect(await page.textContent('[data-testid="schedules"] summary')).toBe("Schedules (1)");
    await shot("schedules");
    // The run nobody on the page asked for streams in like any other.
    await page.waitForFunction((n) => document.querySelectorAll(".msg.assistant").length > n, answers, {
      timeout: 15_000,
    });
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toBe(
      "This is the answer that follows the notice.",
    );
    await page.waitForSelector(
      '[data-testid="schedule-list"] li[data-enabled="false"] .last[data-status="completed"]',
    );
    await page.click('[data-testid="schedule-list"] li button');
    await page.waitForSelector('[data-testid="schedule-list"] li', { state: "detached" });
    expect(await page.textContent('[data-testid="schedules"] summary')).toBe("Schedules (0)");

    // The agent schedules itself (/sim schedule, through Pheby's schedule_create tool): the schedule
    // arrives by schedule.changed, marked as the agent's and waiting, until the user confirms it.
    await send("/sim schedule Water the plants");
    const waiting = '[data-testid="schedule-list"] li[data-confirmed="false"][data-enabled="false"]';
    await page.waitForSelector(waiting);
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toMatch(
      /^I created the schedule \S+ \(every day at 09:00\)\. It is not active until you confirm it in Pheby\.$/,
    );
    expect(await page.textContent(`${waiting} [data-testid="schedule-unconfirmed"]`)).toContain(
      "Made by the agent, not active until you confirm.",
    );
    // On a phone (390 px) the note wraps and its Confirm button stays inside the screen.
    const wide = page.viewportSize()!;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const confirm = page.locator(`${waiting} [data-testid="schedule-confirm"]`);
      await confirm.scrollIntoViewIfNeeded();
      const box = (await confirm.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await shot("schedule-unconfirmed-phone");
      await confirm.click();
      await page.waitForSelector(
        '[data-testid="schedule-list"] li[data-confirmed="true"][data-enabled="true"]',
      );
    } finally {
      await page.setViewportSize(wide);
    }
    expect(await page.$('[data-testid="schedule-unconfirmed"]')).toBeNull();
    expect(await page.textContent('[data-testid="schedule-list"] li .next')).toMatch(/^next /);
    await page.click('[data-testid="schedule-list"] li button[aria-label="Delete schedule"]');
    await page.waitForSelector('[data-testid="schedule-list"] li', { state: "detached" });
  });

  it("after a dropped connection resumes: an approval answered elsewhere meanwhile shows answered, with the rest of the run", async () => {
    await page.evaluate(() => {
      const states: string[] = [];
      (window as unknown as { __states: string[] }).__states = states;
      const el = document.querySelector('[data-testid="status"]')!;
      new MutationObserver(() => states.push(el.getAttribute("data-state")!)).observe(el, {
        attributes: true,
      });
    });
    const asked = other.next("approval.request");
    await send("/sim approval");
    await page.waitForSelector(".card.approval.open");
    const { approval_id, run_id } = await asked;
    // The page is away while another device answers and the run ends.
    proxy.offline(true);
    await waitStatus("reconnecting");
    const finished = other.next("run.finished", (m) => m.run_id === run_id);
    await other.request({ type: "approval.respond", approval_id, choice: "deny", reason: "not on a Friday" });
    await finished;
    proxy.offline(false);
    await waitStatus("open", 20_000);
    await page.waitForSelector('.card.approval.resolved .card-status:has-text("Answered: Deny")');
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain('Your reason: "not on a Friday".');
    expect(await page.locator(".card.approval").count()).toBeGreaterThan(0);
    expect(received.some((f) => f.includes('"type":"conversation.resumed"'))).toBe(true);
    expect(await page.evaluate(() => (window as unknown as { __states: string[] }).__states)).toContain(
      "reconnecting",
    );
  });

  it("queues a message sent during a run, lets you cancel one, and starts the other when the run ends", async () => {
    await send("/sim slow");
    await page.waitForSelector('[data-testid="stop"]', { state: "visible" });
    const users = await page.locator(".msg.user").count();
    for (const text of ["queued one", "queued two"]) {
      await page.fill('[data-testid="message"]', text);
      await page.click('[data-testid="send"]');
      await page.waitForSelector(`[data-testid="queued"]:has-text("${text}")`);
      // Sent: the composer is empty again.
      await page.waitForFunction(
        () => document.querySelector<HTMLTextAreaElement>('[data-testid="message"]')!.value === "",
      );
    }
    expect(
      await page.$$eval('[data-testid="queued"] .queued-text', (l) => l.map((e) => e.textContent)),
    ).toEqual(["queued one", "queued two"]);
    // Queued messages are not in the timeline yet.
    expect(await page.locator(".msg.user").count()).toBe(users);
    await shot("queue");
    await page.click('[data-testid="queued"]:has-text("queued one") [data-testid="cancel-queued"]');
    await page.waitForSelector('[data-testid="queued"]:has-text("queued one")', { state: "detached" });
    await page.click('[data-testid="stop"]');
    await page.waitForSelector('.msg.user:has-text("queued two")');
    await page.waitForSelector('[data-testid="queued"]', { state: "detached" });
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain('You said: "queued two".');
    expect(await page.locator('.msg.user:has-text("queued one")').count()).toBe(0);
  });

  it("changes model, reasoning and YOLO per conversation, live both ways", async () => {
    const conversationId = (await page.getAttribute(
      '[data-testid="conversation-list"] li.selected',
      "data-conversation-id",
    ))!;
    await page.waitForSelector('[data-testid="model"] option:has-text("sim/pro-2")', { state: "attached" });
    const modelHeard = other.next("model.changed", (m) => m.conversation_id === conversationId);
    await page.selectOption('[data-testid="model"]', { label: "sim/pro-2" });
    expect(await modelHeard).toMatchObject({
      model: "sim/pro-2",
      provider: "simcloud",
      scope: "conversation",
    });
    const effortHeard = other.next("reasoning.changed", (m) => m.conversation_id === conversationId);
    await page.selectOption('[data-testid="reasoning"]', "high");
    expect((await effortHeard).effort).toBe("high");
    await send("which model?");
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain(
      "[model: sim/pro-2 (simcloud), reasoning: high]",
    );

    // Another client turns YOLO on: the toggle follows, and approvals are answered by the server.
    await other.request({ type: "yolo.set", conversation_id: conversationId, enabled: true });
    await page.waitForFunction(
      () => (document.querySelector('[data-testid="yolo"]') as HTMLInputElement).checked,
    );
    await send("/sim approval");
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain("Approved (once)");
    expect(await page.locator(".card.approval.open").count()).toBe(0);
    await shot("settings");
    const yoloHeard = other.next("yolo.changed", (m) => m.conversation_id === conversationId);
    await page.uncheck('[data-testid="yolo"]');
    expect((await yoloHeard).enabled).toBe(false);
  });

  it("uploads files with progress, previews images inline and links other files", async () => {
    const png = makePng(48);
    const notes = Buffer.from("# Notes\n\nHello from the console test.\n");
    await page.evaluate(() => {
      const max: Record<string, number> = {};
      (window as unknown as { __progress: Record<string, number> }).__progress = max;
      new MutationObserver((records) => {
        for (const r of records) {
          const bar = r.target as HTMLProgressElement;
          if (bar.tagName !== "PROGRESS") continue;
          const name = bar.parentElement!.textContent!.split(" (")[0]!;
          max[name] = Math.max(max[name] ?? 0, bar.value / bar.max);
        }
      }).observe(document.querySelector('[data-testid="uploads"]')!, { subtree: true, attributes: true });
    });
    await page.setInputFiles('[data-testid="files"]', [
      { name: "pixel.png", mimeType: "image/png", buffer: png },
      { name: "notes.md", mimeType: "text/markdown", buffer: notes },
    ]);
    expect(await page.locator('[data-testid="uploads"] progress').count()).toBe(2);
    await send("two files");
    const preview = '.attachment.inbound img[alt="pixel.png"]';
    await page.waitForFunction(
      (sel) => (document.querySelector(sel) as HTMLImageElement | null)?.naturalWidth === 48,
      preview,
    );
    expect(await page.getAttribute(preview, "src")).toMatch(/^blob:/);
    await page.waitForSelector('.attachment.inbound a.download:has-text("notes.md")');
    expect(
      await page.evaluate(() => (window as unknown as { __progress: Record<string, number> }).__progress),
    ).toEqual({
      "pixel.png": 1,
      "notes.md": 1,
    });
    await settled();
    const reply = (await page.textContent(`${lastAssistant} >> .text`))!;
    expect(reply).toContain(`pixel.png (${png.length} bytes)`);
    expect(reply).toContain(`notes.md (${notes.length} bytes, text inlined)`);

    await send("/sim image");
    await page.waitForFunction(
      () =>
        (document.querySelector('.attachment.outbound img[alt="pheby-image.png"]') as HTMLImageElement | null)
          ?.naturalWidth === 64,
    );
    await settled();
    // Live, the image sits where it arrived: the simulator delivers it before it says anything.
    expect(
      await page.evaluate(() => {
        const figure = document.querySelector('.attachment.outbound img[alt="pheby-image.png"]')!
          .parentElement!;
        return figure.nextElementSibling?.querySelector(".text")?.textContent;
      }),
    ).toMatch(/^Here is your image: pheby-image\.png/);
    await send("/sim file");
    const link = '.attachment.outbound a.download:has-text("pheby-report.pdf")';
    await page.waitForSelector(link);
    await settled();
    const size = Number(/\((\d+) bytes\)/.exec((await page.textContent(`${lastAssistant} >> .text`))!)![1]);
    const downloaded = page.waitForEvent("download");
    await page.click(link);
    const download = await downloaded;
    expect(download.suggestedFilename()).toBe("pheby-report.pdf");
    expect(download.url()).toMatch(/^blob:/);
    const bytes = readFileSync((await download.path())!);
    expect(bytes.length).toBe(size);
    expect(bytes.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    await shot("attachments");

    // Eleven files are refused before anything is uploaded.
    await page.setInputFiles(
      '[data-testid="files"]',
      Array.from({ length: 11 }, (_, i) => ({
        name: `f${i}.txt`,
        mimeType: "text/plain",
        buffer: Buffer.from("x"),
      })),
    );
    await page.waitForSelector('[data-testid="uploads"] .error:has-text("At most 10 files")');
    expect(await page.isDisabled('[data-testid="send"]')).toBe(true);
    await page.setInputFiles('[data-testid="files"]', []);
  });

  it("reopening a conversation shows each file beside the message it came with", async () => {
    const id = (await page.getAttribute(
      '[data-testid="conversation-list"] li.selected',
      "data-conversation-id",
    ))!;
    await page.click('[data-testid="new-conversation"]');
    await page.waitForSelector(
      `[data-testid="conversation-list"] li.selected:not([data-conversation-id="${id}"])`,
    );
    await page.waitForSelector(".attachment", { state: "detached" });
    await page.click(`[data-conversation-id="${id}"] .open`);
    await page.waitForSelector('.attachment.outbound img[alt="pheby-image.png"]');
    // For each file: the text of the nearest message above it.
    const owners = await page.evaluate(() =>
      Object.fromEntries(
        [...document.querySelectorAll(".attachment")].map((figure) => {
          let el = figure.previousElementSibling;
          while (el && !el.matches(".msg")) el = el.previousElementSibling;
          const name =
            figure.querySelector("img")?.alt ?? figure.querySelector("a")!.getAttribute("download");
          return [name, el?.querySelector(".text")?.textContent?.slice(0, 25) ?? null];
        }),
      ),
    );
    expect(owners).toEqual({
      "pixel.png": "two files",
      "notes.md": "two files",
      "pheby-image.png": "Here is your image: pheby",
      "pheby-report.pdf": "Here is your document: ph",
    });
  });

  it("reconnects by itself after a server restart and resumes: the run the crash cut off shows failed", async () => {
    await send("/sim slow");
    await page.waitForFunction(() => {
      const b = document.querySelectorAll(".msg.assistant .text");
      return (b[b.length - 1]?.textContent ?? "").includes("word2");
    });
    other.close();
    await server.stop("SIGKILL");
    await waitStatus("reconnecting");
    await shot("reconnecting");
    server = await startServer(dataDir, server.port);
    await waitStatus("open", 20_000);
    // What the restart did is replayed: the interrupted run ended failed, with the text streamed so far.
    await page.waitForSelector(`${lastAssistant} >> [data-run-status="failed"]`);
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain("word2");
    await page.waitForSelector('[data-testid="stop"]', { state: "hidden" });
    await page.waitForSelector('.msg.user:has-text("Hello **console**")');
    expect(await status()).toBe("open");
    await send("after the restart");
    await settled();
    expect(await page.textContent(`${lastAssistant} >> .text`)).toContain(
      `You said: "after the restart". ${REPLY_TAIL}`,
    );
    await shot("after-restart");
  });
});

describe.skipIf(!hasChromium)("web console from another origin (any static host)", () => {
  it("connects, chats and uploads with an inline preview (an authenticated cross-origin GET), with PHEBY_CORS_ORIGINS naming the host", async () => {
    const host = await startStaticHost();
    const dataDir = tempDataDir();
    const server = await startServer(dataDir, 0, { PHEBY_CORS_ORIGINS: host.origin });
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      page.setDefaultTimeout(12_000);
      const errors: string[] = [];
      page.on("pageerror", (err) => errors.push(err.message));
      await page.goto(`${host.origin}/`);
      await page.fill('[data-testid="url"]', `ws://127.0.0.1:${server.port}/ws`);
      await page.fill('[data-testid="secret"]', SECRET);
      await page.click('[data-testid="connect"]');
      await page.waitForSelector('[data-testid="status"][data-state="open"]');
      await page.click('[data-testid="new-conversation"]');
      await page.waitForSelector('[data-testid="conversation-list"] li.selected');
      const png = makePng(32);
      await page.setInputFiles('[data-testid="files"]', [
        { name: "far.png", mimeType: "image/png", buffer: png },
      ]);
      await page.fill('[data-testid="message"]', "from another origin");
      await page.click('[data-testid="send"]');
      // The preview is fetched cross-origin with the Authorization header: it needs the CORS headers.
      await page.waitForFunction(
        () =>
          (document.querySelector('.attachment.inbound img[alt="far.png"]') as HTMLImageElement | null)
            ?.naturalWidth === 32,
      );
      await page.waitForSelector(`.msg.assistant .text:has-text("far.png (${png.length} bytes)")`);
      await page.screenshot({ path: join(RESULTS, "cross-origin.png") });
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      await server.stop();
      await host.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!hasChromium)("web console with an ACP agent that asks mid-answer", () => {
  it("places the approval card after the text streamed before it and before the text that followed", async () => {
    const dataDir = tempDataDir();
    const agent = fileURLToPath(new URL("./fake-agent.mjs", import.meta.url));
    const server = await startServer(dataDir, 0, {
      PHEBY_AGENT: "acp",
      PHEBY_AGENT_COMMAND: `${process.execPath} ${agent}`,
    });
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      page.setDefaultTimeout(12_000);
      await page.goto(`${server.url}/console/`);
      await page.fill('[data-testid="secret"]', SECRET);
      await page.click('[data-testid="connect"]');
      await page.click('[data-testid="new-conversation"]');
      await page.fill('[data-testid="message"]', "clean up");
      await page.click('[data-testid="send"]');
      await page.click('.card.approval.open button[data-choice="once"]');
      await page.waitForSelector('[data-testid="stop"]', { state: "hidden" });
      await page.waitForFunction(() => !document.querySelector(".msg.streaming"));
      const timeline = await page.$$eval('[data-testid="timeline"] > *', (els) =>
        els.map((el) => (el.matches(".card") ? "[card]" : (el.querySelector(".text")?.textContent ?? ""))),
      );
      expect(timeline).toEqual(["clean up", "Let me check first.", "[card]", "Then I removed it."]);
      // A reload reconnects with the tab's saved secret; history keeps the whole answer as one message.
      await page.reload();
      await page.click('[data-testid="conversation-list"] li .open');
      await page.waitForSelector('.msg.assistant .text:has-text("Let me check first. Then I removed it.")');
    } finally {
      await browser.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
