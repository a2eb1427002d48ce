import { describe, expect, it } from "vitest";
import type { Resolve } from "../../src/push/address.js";
import type { DeliveryResult } from "../../src/push/delivery.js";
import {
  approvalPush,
  clarifyPush,
  DECISION_TTL_SECONDS,
  MAX_PLAINTEXT_BYTES,
  messagePush,
  type PushNotification,
  pushTopic,
  RESULT_TTL_SECONDS,
  resolvedPush,
  runFinishedPush,
  schedulePush,
  testPush,
} from "../../src/push/payload.js";
import { newId } from "../../src/util/ids.js";
import { CONV, phoneRig, rig } from "./rig.js";

/** What every approval payload of {@link approval} carries, previews on or off. */
const APPROVAL_IDS = {
  v: 1,
  kind: "approval",
  tag: pushTopic(CONV, "approval"),
  ts: expect.any(String),
  conversation_id: CONV,
  approval_id: "3d4e5f6070a1",
  choices: ["once", "session", "always", "deny"],
};

const approval = (extra: Partial<Parameters<typeof approvalPush>[0]> = {}) =>
  approvalPush(
    {
      approval_id: "3d4e5f6070a1",
      conversation_id: CONV,
      command: "curl -H 'Authorization: Bearer sk-live-0123456789abcdef' https://x.example",
      description: "Network access",
      choices: ["once", "session", "always", "deny"],
      conversationName: "Project X",
      tool: "run_shell_command",
      ...extra,
    },
    Date.now(),
  );

describe("each kind arrives at a real receiver and decrypts", () => {
  it("approval: ids, conversation name, tool, redacted command preview, choices; TTL, Urgency high, Topic; VAPID", async () => {
    const { r, phone, sub } = await phoneRig();
    const expiresAt = Date.now() + 45_000;
    const result = await r.delivery.enqueue(sub, approval({ expiresAt }), true);
    expect(result).toEqual({ outcome: "delivered", status: 201, withText: true });
    const got = await phone.next();
    const preview = "curl -H 'Authorization: Bearer [REDACTED]' https://x.example";
    expect(got.payload).toEqual({
      ...APPROVAL_IDS,
      expires_at: new Date(expiresAt).toISOString(),
      title: "Project X",
      body: preview,
      conversation_name: "Project X",
      command_preview: preview,
      tool: "run_shell_command",
    });
    expect(got.headers.urgency).toBe("high");
    expect(Number(got.headers.ttl)).toBeGreaterThan(0);
    expect(Number(got.headers.ttl)).toBeLessThanOrEqual(45);
    expect(got.headers.topic).toBe(pushTopic(CONV, "approval"));
    expect(got.headers.topic).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(got.vapid).toMatchObject({ sub: "mailto:owner@pheby.example", publicKey: r.vapidPublicKey });
    expect(r.receiver.errors).toEqual([]);
    expect(r.push.get(sub.id)?.last_success_at).toBeTypeOf("number");
  });

  it("clarify, run_finished, message, resolved and test, in order on one endpoint", async () => {
    const { r, phone, sub } = await phoneRig();
    const now = Date.now();
    const notifications: PushNotification[] = [
      clarifyPush(
        {
          clarify_id: "c1",
          conversation_id: CONV,
          question: "Deploy to staging or production?",
          choices: ["staging", "production"],
          allow_free_text: true,
          conversationName: "Project X",
        },
        now,
      ),
      runFinishedPush(
        {
          conversation_id: CONV,
          run_id: "8c1f",
          status: "completed",
          text: "\n  Deployed to staging.  \nDetails follow…",
          conversationName: "Project X",
        },
        now,
      ),
      messagePush(
        {
          conversation_id: CONV,
          run_id: "9d2e",
          text: "Nightly report: all green",
          conversationName: "Cron",
        },
        now,
      ),
      resolvedPush({ conversation_id: CONV, approval_id: "3d4e5f6070a1" }, now),
      testPush("sub-1", now),
    ];
    const results = await Promise.all(notifications.map((n) => r.delivery.enqueue(sub, n, true)));
    expect(results.map((x) => x.outcome)).toEqual([
      "delivered",
      "delivered",
      "delivered",
      "delivered",
      "delivered",
    ]);
    await phone.next(5);
    const [clarify, finished, message, resolved, test] = phone.received;
    const ts = new Date(now).toISOString();
    expect(clarify!.payload).toEqual({
      v: 1,
      kind: "clarify",
      tag: pushTopic(CONV, "clarify"),
      ts,
      conversation_id: CONV,
      clarify_id: "c1",
      allow_free_text: true,
      title: "Project X",
      body: "Deploy to staging or production?",
      conversation_name: "Project X",
      question: "Deploy to staging or production?",
      choices: ["staging", "production"],
    });
    expect(clarify!.headers).toMatchObject({ urgency: "high", ttl: String(DECISION_TTL_SECONDS) });
    expect(finished!.payload).toEqual({
      v: 1,
      kind: "run_finished",
      tag: pushTopic(CONV, "run_finished"),
      ts,
      conversation_name: "Project X",
      conversation_id: CONV,
      run_id: "8c1f",
      status: "completed",
      title: "Project X",
      body: "Deployed to staging.",
    });
    expect(finished!.headers).toMatchObject({ urgency: "normal", topic: pushTopic(CONV, "run_finished") });
    expect(Number(finished!.headers.ttl)).toBeLessThanOrEqual(RESULT_TTL_SECONDS);
    expect(message!.payload).toMatchObject({
      kind: "message",
      run_id: "9d2e",
      title: "Cron",
      body: "Nightly report: all green",
    });
    expect(message!.headers.topic).toBe(pushTopic(CONV, "message"));
    // The replacing push shares the approval's Topic and urgency, and carries no text.
    expect(resolved!.payload).toEqual({
      v: 1,
      kind: "resolved",
      tag: pushTopic(CONV, "approval"),
      ts,
      conversation_id: CONV,
      approval_id: "3d4e5f6070a1",
    });
    expect(resolved!.headers).toMatchObject({ topic: pushTopic(CONV, "approval"), urgency: "high" });
    expect(test!.payload).toEqual({
      v: 1,
      kind: "test",
      tag: pushTopic("sub-1", "test"),
      ts,
      subscription_id: "sub-1",
      title: "Pheby",
      body: "Test notification",
    });
    expect(r.receiver.errors).toEqual([]);
  });

  it("previews off: ids only, no text of any kind", async () => {
    const { r, phone, sub } = await phoneRig();
    await r.delivery.enqueue(sub, approval(), false);
    expect((await phone.next()).payload).toEqual(APPROVAL_IDS);
  });

  it("keeps the encrypted body within 4 KiB however long the texts are", async () => {
    const { r, phone, sub } = await phoneRig();
    const long = "é😀".repeat(5_000);
    const n = clarifyPush(
      {
        clarify_id: "c1",
        conversation_id: CONV,
        question: long,
        choices: Array.from({ length: 50 }, () => long),
        allow_free_text: false,
        conversationName: long,
      },
      Date.now(),
    );
    await r.delivery.enqueue(sub, n, true);
    const got = await phone.next();
    expect(got.bodyBytes).toBeLessThanOrEqual(4096);
    expect(Buffer.byteLength(JSON.stringify(got.payload))).toBeLessThanOrEqual(MAX_PLAINTEXT_BYTES);
    expect(got.payload).toMatchObject({ kind: "clarify", clarify_id: "c1", allow_free_text: false });
    // No lone surrogate was produced by shortening.
    expect(JSON.stringify(got.payload)).not.toMatch(/\\ud[89ab]/i);
    expect((got.payload.body as string).length).toBeGreaterThan(10);
  });

  it("schedule: the agent's schedule, its prompt redacted and shortened, within the limit; ids only without previews", async () => {
    const { r, phone, sub } = await phoneRig();
    const prompt = `curl -H "Authorization: Bearer sk-abcdef0123456789abcdef0123456789" ${"é😀".repeat(5_000)}`;
    const n = schedulePush(
      { conversation_id: CONV, schedule_id: "s1", prompt, conversationName: "é😀".repeat(5_000) },
      Date.now(),
    );
    expect(n).toMatchObject({
      kind: "schedule",
      event: undefined,
      urgency: "normal",
      ttlSeconds: RESULT_TTL_SECONDS,
    });
    await r.delivery.enqueue(sub, n, true);
    const got = await phone.next();
    expect(Buffer.byteLength(JSON.stringify(got.payload))).toBeLessThanOrEqual(MAX_PLAINTEXT_BYTES);
    expect(got.payload).toMatchObject({ v: 1, kind: "schedule", conversation_id: CONV, schedule_id: "s1" });
    expect(JSON.stringify(got.payload)).not.toContain("sk-abcdef0123456789");
    await r.delivery.enqueue(sub, n, false);
    expect(Object.keys((await phone.next()).payload).sort()).toEqual(
      ["conversation_id", "kind", "schedule_id", "tag", "ts", "v"].sort(),
    );
  });
});

describe("outcomes", () => {
  it.each([404, 410])("%i removes the subscription and drops what was queued behind", async (status) => {
    const { r, phone, sub } = await phoneRig();
    phone.answer(status);
    const first = r.delivery.enqueue(sub, approval(), true);
    const second = r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true);
    expect(await first).toEqual({ outcome: "removed", status });
    expect(await second).toEqual({ outcome: "dropped", reason: "unsubscribed" });
    expect(r.push.get(sub.id)).toBeUndefined();
    expect(phone.requests).toBe(1);
  });

  it("413 is retried at once without text", async () => {
    const { r, phone, sub } = await phoneRig();
    phone.answer(413);
    expect(await r.delivery.enqueue(sub, approval(), true)).toEqual({
      outcome: "delivered",
      status: 201,
      withText: false,
    });
    expect(phone.requests).toBe(2);
    expect((await phone.next()).payload).not.toHaveProperty("title");
    expect(r.push.get(sub.id)?.last_error).toBe("HTTP 413");
  });

  it("429 waits for Retry-After before trying again", async () => {
    const { r, phone, sub } = await phoneRig();
    phone.answer({ status: 429, headers: { "Retry-After": "1" } });
    const asked = Date.now();
    expect((await r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true)).outcome).toBe("delivered");
    // A lower bound only: a loaded machine can only make the wait longer.
    expect((await phone.next()).receivedAt - asked).toBeGreaterThanOrEqual(1_000);
    expect(phone.requests).toBe(2);
  });

  it("5xx retries with backoff, bounded: success on a later attempt, failure after the last", async () => {
    const { r, phone, sub } = await phoneRig();
    phone.answer(500, 503);
    expect((await r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true)).outcome).toBe("delivered");
    expect(phone.requests).toBe(3);
    phone.answer(500, 502, 500, 500);
    expect(await r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true)).toEqual({
      outcome: "failed",
      error: "HTTP 500",
      status: 500,
    });
    expect(phone.requests).toBe(6); // FAST_RETRY.attempts
    expect(r.push.get(sub.id)).toMatchObject({ last_error: "HTTP 500" });
    expect(r.push.get(sub.id)?.last_success_at).toBeTypeOf("number");
  });

  it("a request that hangs times out and is retried", async () => {
    const { r, phone, sub } = await phoneRig({ timeoutMs: 300 });
    phone.answer("hang");
    expect((await r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true)).outcome).toBe("delivered");
    expect(phone.requests).toBe(2);
    expect(r.logs.some((l) => l.outcome === "retry" && l.reason === "timeout")).toBe(true);
  });

  it("never follows a redirect", async () => {
    const r = await rig();
    const phone = r.receiver.endpoint("phone");
    const elsewhere = r.receiver.endpoint("elsewhere");
    const sub = r.subscribe(phone);
    phone.answer({ status: 307, headers: { Location: elsewhere.endpoint } });
    expect(await r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true)).toEqual({
      outcome: "failed",
      error: "HTTP 307",
      status: 307,
    });
    expect(elsewhere.requests).toBe(0);
    expect(r.push.get(sub.id)?.last_error).toBe("HTTP 307");
  });

  it("logs one line per request with the endpoint's origin only, never the endpoint or keys", async () => {
    const r = await rig();
    const phone = r.receiver.endpoint("phone-secret-path");
    const sub = r.subscribe(phone);
    phone.answer(500);
    await r.delivery.enqueue(sub, approval(), true);
    const sends = r.logs.filter((l) => l.msg === "push sent" || l.msg === "push not delivered");
    expect(sends.map((l) => [l.outcome, l.attempt])).toEqual([
      ["retry", 1],
      ["delivered", 2],
    ]);
    expect(sends[0]).toMatchObject({ origin: r.receiver.url, kind: "approval", status: 500 });
    const all = JSON.stringify(r.logs);
    expect(all).not.toContain("phone-secret-path");
    expect(all).not.toContain(phone.keys.p256dh);
    expect(all).not.toContain(phone.keys.auth);
    expect(all).not.toContain("Project X");
  });
});

describe("a bad endpoint hurts nobody else", () => {
  it("a hanging endpoint does not delay another endpoint", async () => {
    const r = await rig({ timeoutMs: 60_000 });
    const stuck = r.receiver.endpoint("stuck");
    const fine = r.receiver.endpoint("fine");
    const stuckSub = r.subscribe(stuck);
    const fineSub = r.subscribe(fine);
    stuck.answer("hang");
    const stuckResult = r.delivery.enqueue(stuckSub, approval(), true);
    await stuck.requested(1);
    let settled: DeliveryResult | undefined;
    void stuckResult.then((x) => {
      settled = x;
    });
    expect((await r.delivery.enqueue(fineSub, approval(), true)).outcome).toBe("delivered");
    // The other endpoint's push went through while this one's request is still open.
    expect(settled).toBeUndefined();
    await r.delivery.close();
    expect(await stuckResult).toEqual({ outcome: "dropped", reason: "closed" });
  });

  it("enqueueing returns before anything is encrypted or sent", async () => {
    const { r, phone, sub } = await phoneRig();
    const pending = r.delivery.enqueue(sub, approval(), true);
    // Nothing has left yet: the send starts on a later turn of the event loop.
    expect(phone.requests).toBe(0);
    await pending;
    expect(phone.requests).toBe(1);
  });

  it("a queued question is superseded by its resolved push (same Topic): the stale action never leaves", async () => {
    const { r, phone, sub } = await phoneRig({ timeoutMs: 60_000 });
    phone.answer("hang");
    const blocker = r.delivery.enqueue(sub, testPush(sub.id, Date.now()), true);
    await phone.requested(1);
    const question = r.delivery.enqueue(sub, approval(), true);
    const resolved = r.delivery.enqueue(
      sub,
      resolvedPush({ conversation_id: CONV, approval_id: "3d4e5f6070a1" }, Date.now()),
      true,
    );
    expect(await question).toEqual({ outcome: "dropped", reason: "superseded" });
    await r.delivery.close();
    await blocker;
    expect(await resolved).toEqual({ outcome: "dropped", reason: "closed" });
  });
});

describe("SSRF at send time (the address actually connected to)", () => {
  it("refuses an https endpoint whose name now resolves to loopback (DNS rebinding): nothing arrives", async () => {
    let answers = 0;
    // First answer public (as at subscribe time), then the receiver's loopback address.
    const rebinding: Resolve = async () => {
      answers++;
      return [{ address: answers === 1 ? "93.184.216.34" : "127.0.0.1", family: 4 }];
    };
    const r = await rig({ allowPrivate: false, resolve: rebinding });
    const phone = r.receiver.endpoint("phone");
    const { port } = new URL(r.receiver.url);
    const sub = r.push.subscribe(
      {
        id: newId(),
        endpoint: `https://push.rebind.example:${port}/push/phone`,
        ...phone.keys,
        device_name: null,
        events: ["approval"],
        device_id: null,
      },
      Date.now(),
    ).row;
    await rebinding("push.rebind.example"); // the subscribe-time check saw a public address
    const result = await r.delivery.enqueue(sub, approval(), true);
    expect(result).toMatchObject({ outcome: "failed" });
    expect((result as { error: string }).error).toMatch(/not public/);
    expect(phone.requests).toBe(0);
    expect(r.push.get(sub.id)?.last_error).toMatch(/refused/);
  });

  it("refuses plain http and private literals without private addresses allowed", async () => {
    const { r, phone, sub } = await phoneRig({ allowPrivate: false }); // http://127.0.0.1:…, stored before the operator turned the rule on
    expect(await r.delivery.enqueue(sub, approval(), true)).toMatchObject({ outcome: "failed" });
    expect(phone.requests).toBe(0);
  });
});
