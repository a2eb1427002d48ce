// Shared set-up of the push tests: a real receiver, a real SQLite store, the real sender and queues.
import { Writable } from "node:stream";
import { type Logger, pino } from "pino";
import { afterEach, expect } from "vitest";
import {
  type PushReceiver,
  type ReceiverEndpoint,
  startReceiver,
} from "../../../conformance/src/push-receiver.js";
import type { Resolve } from "../../src/push/address.js";
import { PushDelivery, type RetryPolicy } from "../../src/push/delivery.js";
import { PushSender } from "../../src/push/sender.js";
import { loadOrCreateVapidKeys } from "../../src/push/vapid.js";
import type { PushStore, PushSubscriptionRow } from "../../src/store/push.js";
import { Store } from "../../src/store/store.js";
import { newId } from "../../src/util/ids.js";
import { systemClock } from "../../src/util/time.js";
import { useTempDirs } from "../helpers.js";

const tempDir = useTempDirs();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export const CONV = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
export const FAST_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 50, maxDelayMs: 5_000 };

export interface Rig {
  receiver: PushReceiver;
  push: PushStore;
  delivery: PushDelivery;
  logs: Record<string, unknown>[];
  log: Logger;
  vapidPublicKey: string;
  subscribe(endpoint: ReceiverEndpoint, events?: string[]): PushSubscriptionRow;
}

export async function rig(
  options: { allowPrivate?: boolean; timeoutMs?: number; retry?: RetryPolicy; resolve?: Resolve } = {},
): Promise<Rig> {
  const dir = tempDir();
  const receiver = await startReceiver();
  const store = new Store(dir);
  const push = store.push;
  const vapid = loadOrCreateVapidKeys(dir);
  const logs: Record<string, unknown>[] = [];
  const log = pino(
    { level: "debug" },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  const sender = new PushSender({
    vapid,
    subject: "mailto:owner@pheby.example",
    policy: { allowPrivate: options.allowPrivate ?? true },
    timeoutMs: options.timeoutMs ?? 10_000,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  const delivery = new PushDelivery({
    sender,
    store: push,
    clock: systemClock,
    log,
    retry: options.retry ?? FAST_RETRY,
  });
  cleanups.push(
    // Every push that arrived decrypted and carried a valid VAPID signature.
    () => expect(receiver.errors).toEqual([]),
    () => receiver.close(),
    () => store.close(),
    () => sender.close(),
    () => delivery.close(), // first: queues stop before the store closes
  );
  return {
    receiver,
    push,
    delivery,
    logs,
    log,
    vapidPublicKey: vapid.publicKey,
    subscribe: (endpoint, events = ["approval", "clarify", "run_finished", "message"]) =>
      push.subscribe(
        {
          id: newId(),
          endpoint: endpoint.endpoint,
          ...endpoint.keys,
          device_name: endpoint.name,
          events,
          device_id: null,
        },
        Date.now(),
      ).row,
  };
}

/** A rig with one receiver endpoint ("phone") subscribed to everything. */
export async function phoneRig(options: Parameters<typeof rig>[0] = {}) {
  const r = await rig(options);
  const phone = r.receiver.endpoint("phone");
  return { r, phone, sub: r.subscribe(phone) };
}
