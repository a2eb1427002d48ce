// @pheby/client's push API against the real server and the decrypting receiver.
import { DEFAULT_FEATURES } from "@pheby/client";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver } from "../../../conformance/src/push-receiver.js";
import { phebyClient, startServer } from "../helpers.js";
import { FAST_RETRY } from "./rig.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("@pheby/client push API", () => {
  it("subscribePush, listPush, testPush, presence (repeated after a reconnect), unsubscribePush", async () => {
    const receiver = await startReceiver();
    const ts = await startServer({ push: { allowPrivate: true, retry: FAST_RETRY } });
    cleanups.push(
      () => receiver.close(),
      () => ts.cleanup(),
    );
    const client = await phebyClient(ts);
    cleanups.push(() => client.close());
    expect(client.features).toContain("push");
    expect(client.vapidPublicKey).toMatch(/^[A-Za-z0-9_-]{87}$/);

    const phone = receiver.endpoint("phone");
    const id = await client.subscribePush(phone, { deviceName: "Pixel", events: ["run_finished"] });
    expect(await client.listPush()).toMatchObject([
      { subscription_id: id, device_name: "Pixel", events: ["run_finished"] },
    ]);
    expect(await client.testPush(id)).toMatchObject({
      type: "push.tested",
      subscription_id: id,
      ok: true,
      status: null,
      error: null,
    });

    const { conversation_id } = await client.request({ type: "conversation.create" });
    client.presence("active", conversation_id);
    const quiet = await client.request({ type: "chat.send", conversation_id, text: "while looking" });
    await client.next("run.finished", (m) => m.run_id === quiet.run_id);
    client.presence("background");
    const loud = await client.request({ type: "chat.send", conversation_id, text: "while away" });
    await client.next("run.finished", (m) => m.run_id === loud.run_id);
    const pushed = await phone.next(2);
    expect(pushed.payload).toMatchObject({ kind: "run_finished", run_id: loud.run_id });
    expect(phone.received.map((p) => p.payload.kind)).toEqual(["test", "run_finished"]);

    await client.unsubscribePush(id);
    expect(await client.listPush()).toEqual([]);
    await expect(client.testPush(id)).rejects.toMatchObject({ code: "not_found" });
  });

  it("a features list without push does not ask for the extension; its requests are unknown_type", async () => {
    const ts = await startServer();
    cleanups.push(() => ts.cleanup());
    const client = await phebyClient(ts, { features: DEFAULT_FEATURES.filter((f) => f !== "push") });
    cleanups.push(() => client.close());
    expect(client.features).not.toContain("push");
    expect(client.vapidPublicKey).toBeUndefined();
    await expect(client.listPush()).rejects.toMatchObject({ code: "unknown_type" });
  });
});
