// A device revoked while one of its requests waits (a push endpoint's name resolving, a history
// replay) must get nothing stored or started for it afterwards. A real server on port 0, a paired
// device's own socket, a real SQLite file.
import { createECDH, randomBytes } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentBackend, TurnResult } from "../src/agent/port.js";
import type { Resolve } from "../src/push/address.js";
import { DB_FILE } from "../src/store/store.js";
import {
  helloWith,
  NO_CAPABILITIES,
  pairDevice,
  type RawClient,
  send,
  startServer,
  type TestServer,
  type TestServerOptions,
} from "./helpers.js";
import { FAST_RETRY } from "./push/rig.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A promise and the function that settles it. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const opened = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

/** A server, the owner's connection (push, devices) and a paired device's connection (`features`). */
async function ownerAndDevice(options: TestServerOptions, features: string[]) {
  const ts = await startServer({ publicUrl: "wss://pheby.example.com/ws", ...options });
  cleanups.push(() => ts.cleanup());
  const owner = await helloWith(ts, ["push", "devices"]);
  cleanups.push(() => owner.close());
  const device = await pairDevice(ts, owner);
  const phone = await helloWith(ts, features, device.secret);
  cleanups.push(() => phone.close());
  return { ts, owner, device, phone };
}

async function revoke(owner: RawClient, phone: RawClient, deviceId: string): Promise<void> {
  await owner.ok({ type: "device.revoke", device_id: deviceId }, "device.revoked");
  expect((await phone.closed).code).toBe(4401);
}

/** The rows of a table, read from the server's SQLite file by another connection. */
function rows(ts: TestServer, table: string): unknown[] {
  const db = new Database(join(ts.dataDir, DB_FILE), { readonly: true });
  try {
    return db.prepare(`SELECT * FROM ${table}`).all();
  } finally {
    db.close();
  }
}

describe("a device revoked while its request waits", () => {
  it("push.subscribe resolving its endpoint's name: nothing is stored, no notification goes out", async () => {
    // The endpoint's name answers only when the test says so; any later lookup is a delivery
    // attempt, recorded and refused (a loopback answer), so nothing leaves the machine.
    const slow = gate<void>();
    const resolving = gate<void>();
    const checked = new Set<string>();
    const deliveries: string[] = [];
    const resolve: Resolve = async (hostname) => {
      if (checked.has(hostname)) {
        deliveries.push(hostname);
        return [{ address: "127.0.0.1", family: 4 }];
      }
      checked.add(hostname);
      if (hostname === "push.phone.example") {
        resolving.open();
        await slow.opened;
      }
      return [{ address: "93.184.216.34", family: 4 }];
    };
    const { ts, owner, device, phone } = await ownerAndDevice({ push: { retry: FAST_RETRY, resolve } }, [
      "push",
    ]);
    // Real keys (a P-256 point, 16 bytes): the subscribe must fail for the revoke alone.
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    const keys = {
      p256dh: ecdh.getPublicKey().toString("base64url"),
      auth: randomBytes(16).toString("base64url"),
    };

    phone.send({ type: "push.subscribe", endpoint: "https://push.phone.example/p", keys, request_id: "s1" });
    await resolving.opened;
    await revoke(owner, phone, device.id);
    slow.open();

    // The owner's own subscription, and a run that pushes run_finished to every subscription.
    await owner.ok(
      { type: "push.subscribe", endpoint: "https://push.owner.example/p", keys },
      "push.subscribed",
    );
    const listed = await owner.ok({ type: "push.list" }, "push.subscriptions");
    expect(listed.subscriptions.map((s) => s.endpoint_origin)).toEqual(["https://push.owner.example"]);
    const { conversation_id } = await owner.ok({ type: "conversation.create" }, "conversation.created");
    await owner.run(await send(owner, conversation_id, "hello"));
    // The owner's push.test queues behind that run_finished on its own endpoint: once it is
    // answered, the run's notifications have been attempted.
    const [sub] = listed.subscriptions;
    await owner.ok({ type: "push.test", subscription_id: sub!.subscription_id }, "push.tested");

    expect(rows(ts, "push_subscriptions")).toHaveLength(1);
    expect(deliveries).not.toContain("push.phone.example");
    expect(deliveries).toContain("push.owner.example");
    expect(phone.frames.some((m) => m.type === "push.subscribed")).toBe(false);
  });

  it("chat.send waiting on a history replay: no message is stored, no run starts", async () => {
    const replay = gate<void>();
    const replaying = gate<void>();
    const prompts: string[] = [];
    const backend: AgentBackend = {
      name: "replaying",
      capabilities: { ...NO_CAPABILITIES, listSessions: true, loadHistory: true },
      async start() {},
      async createSession(conversationId) {
        return { sessionId: `s-${conversationId}` };
      },
      async listSessions() {
        return [{ sessionId: "agent-session-1", title: "From the agent" }];
      },
      async loadHistory() {
        replaying.open();
        await replay.opened;
        return [];
      },
      async prompt(input): Promise<TurnResult> {
        prompts.push(input.text);
        return { status: "completed" };
      },
      async close() {},
    };
    const { ts, owner, device, phone } = await ownerAndDevice({ agent: backend }, []);
    const snapshot = await phone.ok({ type: "conversation.list" }, "conversation.snapshot");
    const conv = snapshot.conversations[0]!.conversation_id;
    // The open starts the replay of the imported session's empty mirror; the send waits for it.
    phone.send({ type: "conversation.open", conversation_id: conv, request_id: "o1" });
    await replaying.opened;
    phone.send({ type: "chat.send", conversation_id: conv, text: "rm -rf ~", request_id: "c1" });
    await phone.ok({ type: "ping" }, "pong"); // the send was read and is waiting
    await revoke(owner, phone, device.id);
    replay.open();

    const history = await owner.ok(
      { type: "conversation.open", conversation_id: conv },
      "conversation.history",
    );
    expect(history.messages).toEqual([]);
    expect(history.run).toBeNull();
    expect(rows(ts, "messages")).toEqual([]);
    expect(prompts).toEqual([]);
    expect(owner.frames.some((m) => m.type === "run.accepted")).toBe(false);
  });
});
