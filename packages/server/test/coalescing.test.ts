// The behaviour delta coalescing and compression rely on: deltas are growing
// prefixes of the final text, the first chunk goes out at once, the exact
// final text always arrives in message.complete, and a reader that stalls
// mid-stream still gets every delta, in order.
import type { ServerMessageOf } from "@pheby/protocol";
import { afterEach, expect, it } from "vitest";
import {
  createConversation,
  RawClient,
  send,
  startServer,
  streamingBackend,
  type TestServer,
} from "./helpers.js";

const CHUNKS = Array.from({ length: 120 }, (_, i) => `w${i} `);
const FINAL = CHUNKS.join("");

let ts: TestServer | undefined;
afterEach(async () => {
  await ts?.cleanup();
  ts = undefined;
});

async function streamOnce(deltaIntervalMs: number | undefined, text: "paced" | "burst") {
  ts = await startServer({
    transport: "memory",
    agent: streamingBackend(CHUNKS, { pauseMs: 2 }),
    ...(deltaIntervalMs === undefined ? {} : { deltaIntervalMs }),
  });
  const c = await RawClient.connect(ts.wsUrl);
  const runId = await send(c, await createConversation(c), text);
  const frames = await c.run(runId);
  c.close();
  return frames;
}

function deltasOf(frames: Awaited<ReturnType<RawClient["run"]>>) {
  const message = frames.filter((m) => m.type.startsWith("message."));
  const deltas = message.filter((m) => m.type === "message.delta") as ServerMessageOf<"message.delta">[];
  const complete = message.at(-1) as ServerMessageOf<"message.complete">;
  return { deltas: deltas.map((d) => d.text), complete };
}

/** Every delta strictly extends the one before and is a prefix of the exact final text. */
function expectPrefixes(deltas: string[], final: string) {
  let previous = "";
  for (const d of deltas) {
    expect(d.length).toBeGreaterThan(previous.length);
    expect(d.startsWith(previous)).toBe(true);
    expect(final.startsWith(d)).toBe(true);
    previous = d;
  }
}

it("coalesced (default window): the first chunk goes out alone, deltas are prefixes, complete is exact", async () => {
  const { deltas, complete } = deltasOf(await streamOnce(undefined, "paced"));
  expect(complete.type).toBe("message.complete");
  expect(complete.text).toBe(FINAL);
  expect(deltas[0]).toBe(CHUNKS[0]);
  expect(deltas.length).toBeLessThan(CHUNKS.length);
  expectPrefixes(deltas, FINAL);
});

it("deltaIntervalMs 0 sends one delta per agent chunk", async () => {
  const { deltas, complete } = deltasOf(await streamOnce(0, "paced"));
  expect(deltas).toEqual(CHUNKS.map((_, i) => CHUNKS.slice(0, i + 1).join("")));
  expect(complete.text).toBe(FINAL);
});

it("a burst ends with the exact text in message.complete even though its window never elapsed", async () => {
  const { deltas, complete } = deltasOf(await streamOnce(10_000, "burst"));
  expect(deltas).toEqual([CHUNKS[0]]);
  expect(complete.text).toBe(FINAL);
});

it("a reader that stalls mid-stream (compressed) gets every delta in order, then the exact text", async () => {
  ts = await startServer({ agent: streamingBackend(CHUNKS, { pauseMs: 2 }), deltaIntervalMs: 5 });
  const driver = await RawClient.connect(ts.wsUrl);
  const stalled = await RawClient.connect(ts.wsUrl);
  expect(stalled.ws.extensions).toContain("permessage-deflate");
  const socket = (stalled.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  const id = await createConversation(driver);
  const runId = await send(driver, id, "paced");
  await stalled.next("message.delta");
  socket.pause();
  const seen = deltasOf(await driver.run(runId));
  socket.resume();
  const got = deltasOf(await stalled.run(runId));
  expect(got.deltas).toEqual(seen.deltas);
  expect(got.complete.text).toBe(FINAL);
  expectPrefixes(got.deltas, FINAL);
  driver.close();
  stalled.close();
});

it("deltaIntervalMs must be a number >= 0 (0 accepted, -1 and NaN refused)", async () => {
  for (const bad of [-1, Number.NaN]) {
    await expect(startServer({ deltaIntervalMs: bad, transport: "memory" })).rejects.toThrow(
      /deltaIntervalMs must be a number >= 0/,
    );
  }
  ts = await startServer({ deltaIntervalMs: 0, transport: "memory" });
});
