import { DEFAULT_FEATURES, type PhebyClientOptions, PhebyError } from "@pheby/client";
import {
  FEATURE_ACTIVITY,
  FEATURE_CHANGES,
  FEATURE_DELTA_APPEND,
  FEATURE_INBOX,
  FEATURE_MODES,
  FEATURE_PUSH,
  FEATURE_QUEUE,
  FEATURE_RESUME,
  FEATURE_WORKSPACES,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { phebyClient, RawClient, startServer, streamingBackend, type TestServer } from "./helpers.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startServer();
});
afterAll(() => ts.cleanup());

describe("@pheby/client against the real server", () => {
  it("creates a conversation, streams a reply, and reads it back", async () => {
    const client = await phebyClient(ts);
    const { conversation_id } = await client.request({ type: "conversation.create", name: "Via client" });
    const deltas: string[] = [];
    client.on("message.delta", (m) => deltas.push(m.text));
    const complete = client.next("message.complete", (m) => m.conversation_id === conversation_id);
    const finished = client.next("run.finished", (m) => m.conversation_id === conversation_id);
    const accepted = await client.request({ type: "chat.send", conversation_id, text: "hi from the client" });
    expect((await finished).run_id).toBe(accepted.run_id);
    expect(deltas.length).toBeGreaterThan(0);
    const history = await client.request({ type: "conversation.open", conversation_id });
    expect(history.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const final = (await complete).text;
    expect(final.startsWith(deltas.at(-1)!)).toBe(true);
    expect(history.messages[1]!.text).toBe(final);
    client.close();
  });

  it("rejects with a PhebyError carrying the spec's code", async () => {
    const client = await phebyClient(ts);
    const err = await client
      .request({ type: "conversation.open", conversation_id: "0".repeat(32) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PhebyError);
    expect((err as PhebyError).code).toBe("conversation_not_found");
    client.close();
  });

  it("run.cancel resolves with the cancelled run.finished", async () => {
    const client = await phebyClient(ts);
    const { conversation_id } = await client.request({ type: "conversation.create" });
    const { run_id } = await client.request({ type: "chat.send", conversation_id, text: "/sim slow" });
    await client.next("message.delta");
    const finished = await client.request({ type: "run.cancel", conversation_id, run_id });
    expect(finished).toMatchObject({ type: "run.finished", status: "cancelled", run_id });
    client.close();
  });
});

describe("@pheby/client and append deltas (delta.append)", () => {
  const WORDS = Array.from({ length: 40 }, (_, i) => `w${i}😀 `);
  let streaming: TestServer;
  beforeAll(async () => {
    streaming = await startServer({ agent: streamingBackend(WORDS), deltaIntervalMs: 0 });
  });
  afterAll(() => streaming.cleanup());

  async function deltasOf(options: Partial<PhebyClientOptions>) {
    const client = await phebyClient(streaming, options);
    const v1 = await RawClient.connect(streaming.wsUrl);
    const { conversation_id } = await client.request({ type: "conversation.create" });
    const deltas: ServerMessageOf<"message.delta">[] = [];
    client.on("message.delta", (m) => deltas.push(m));
    const finished = client.next("run.finished", (m) => m.conversation_id === conversation_id);
    const { run_id } = await client.request({ type: "chat.send", conversation_id, text: "go" });
    await finished;
    const cumulative = (await v1.run(run_id)).filter((m) => m.type === "message.delta");
    v1.close();
    client.close();
    return { deltas, cumulative, features: client.features };
  }

  it("negotiates by default and hands handlers exactly the cumulative deltas a v1 connection gets (plus resume's seq)", async () => {
    const { deltas, cumulative, features } = await deltasOf({});
    // In the order asked: the client's FEATURE_PRIORITY.
    expect(features).toEqual([
      FEATURE_DELTA_APPEND,
      FEATURE_RESUME,
      FEATURE_QUEUE,
      FEATURE_PUSH,
      FEATURE_ACTIVITY,
      FEATURE_MODES,
      FEATURE_INBOX,
      FEATURE_WORKSPACES,
      FEATURE_CHANGES,
    ]);
    expect(deltas).toHaveLength(WORDS.length);
    expect(deltas.map(({ seq: _seq, ...v1 }) => v1)).toEqual(cumulative);
    expect(deltas.every((d) => typeof d.seq === "number")).toBe(true);
  });

  it("with every extension off it does not ask (ready has no features) and gets the same deltas", async () => {
    const { deltas, cumulative, features } = await deltasOf({ features: [] });
    expect(features).toEqual([]);
    expect(deltas).toEqual(cumulative);
  });

  it("features asks for other extensions; their requests and events work through request() and on()", async () => {
    const client = await phebyClient(streaming, {
      features: [...DEFAULT_FEATURES, "schedules", "x-unknown"],
    });
    const other = await phebyClient(streaming, { features: ["schedules"] });
    try {
      expect(client.features).toEqual([
        FEATURE_DELTA_APPEND,
        "resume",
        "queue",
        "push",
        "schedules",
        "activity",
        "modes",
        "inbox",
        "workspaces",
        "changes",
      ]);
      expect(other.features).toEqual(["schedules"]);
      const { conversation_id } = await client.request({ type: "conversation.create" });
      const heard = other.next("schedule.changed");
      const { schedule } = await client.request({
        type: "schedule.create",
        conversation_id,
        prompt: "p",
        cron: "0 8 * * *",
      });
      expect((await heard).schedule).toEqual(schedule);
      const changed = await client.request({ type: "schedule.delete", schedule_id: schedule.schedule_id });
      expect(changed).toMatchObject({ type: "schedule.changed", deleted: true });
    } finally {
      client.close();
      other.close();
    }
  });
});

describe("@pheby/client and a lockout", () => {
  it("connect() rejects with rate_limited naming the wait; after that wait it connects", async () => {
    const locking = await startServer({ lockout: { maxFailures: 1, durationMs: 1_500 } });
    try {
      await expect(phebyClient(locking, { secret: "wrong" })).rejects.toMatchObject({ code: "unauthorized" });
      const client = await phebyClient(locking).catch((e: unknown) => e);
      expect(client).toBeInstanceOf(PhebyError);
      // 1.5 s locks, rounded up to whole seconds by the server.
      expect(client).toMatchObject({ code: "rate_limited", retryAfterMs: 2_000 });
      await new Promise((r) => setTimeout(r, (client as PhebyError).retryAfterMs));
      const again = await phebyClient(locking);
      expect(again.state).toBe("open");
      again.close();
    } finally {
      await locking.cleanup();
    }
  });
});

describe("@pheby/client chat() and a lost append delta, against the real server", () => {
  const WORDS = Array.from({ length: 30 }, (_, i) => `w${i} `);

  it("chat() yields the run.accepted reply, the run's frames and its run.finished, then ends", async () => {
    const streaming = await startServer({ agent: streamingBackend(WORDS), deltaIntervalMs: 0 });
    const client = await phebyClient(streaming);
    try {
      const { conversation_id } = await client.request({ type: "conversation.create" });
      const frames: ServerMessage[] = [];
      for await (const frame of client.chat(conversation_id, "go")) frames.push(frame);
      const accepted = frames[0] as ServerMessageOf<"run.accepted">;
      expect(accepted.type).toBe("run.accepted");
      expect(frames.at(-1)).toMatchObject({
        type: "run.finished",
        run_id: accepted.run_id,
        status: "completed",
      });
      const deltas = frames.filter((f) => f.type === "message.delta");
      expect(deltas.at(-1)!.text).toBe(WORDS.join(""));
      expect(frames.filter((f) => f.type === "message.complete")).toHaveLength(1);
      expect(
        frames.every((f) => (f as { conversation_id?: string }).conversation_id === conversation_id),
      ).toBe(true);
    } finally {
      client.close();
      await streaming.cleanup();
    }
  });

  it("a delta lost on the way: the client re-opens the conversation once and its handlers go on from the snapshot's draft", async () => {
    let open!: () => void;
    const gate = { after: 5, open: new Promise<void>((resolve) => (open = resolve)) };
    const streaming = await startServer({
      agent: streamingBackend(WORDS, { pauseMs: 5, gate }),
      deltaIntervalMs: 0,
    });
    const sent: Record<string, unknown>[] = [];
    let appends = 0;
    /** A socket that loses the answer's second append delta (as if a frame went missing) and records what it sends. */
    class LossyWebSocket extends WebSocket {
      override send(data: string): void {
        sent.push(JSON.parse(data) as Record<string, unknown>);
        super.send(data);
      }
      override emit(event: string | symbol, ...args: unknown[]): boolean {
        if (event === "message") {
          const frame = JSON.parse(String(args[0])) as { type: string; offset?: number };
          if (frame.type === "message.delta" && (frame.offset ?? 0) > 0 && ++appends === 2) return false;
        }
        return super.emit(event, ...args);
      }
    }
    const client = await phebyClient(streaming, {
      WebSocket: LossyWebSocket as unknown as PhebyClientOptions["WebSocket"],
    });
    try {
      const { conversation_id } = await client.request({ type: "conversation.create" });
      const texts: string[] = [];
      client.on("message.delta", (m) => texts.push(m.text));
      const repaired = client.next("conversation.history", (m) => m.request_id === undefined);
      const finished = client.next("run.finished", (m) => m.conversation_id === conversation_id);
      await client.request({ type: "chat.send", conversation_id, text: "go" });
      const snapshot = await repaired;
      // The run waits at the gate (after 5 words), so the snapshot shows it active: its draft has at
      // least the 4 words whose delta revealed the gap (the 3rd was lost).
      const full = WORDS.join("");
      expect(snapshot.run?.text.startsWith(WORDS.slice(0, 4).join(""))).toBe(true);
      expect(full.startsWith(snapshot.run!.text)).toBe(true);
      open();
      await finished;
      expect(texts.at(-1)).toBe(full);
      // Never a stale or broken draft: each is a prefix of the answer, and they only grow.
      expect(texts.every((t, i) => full.startsWith(t) && t.length >= (texts[i - 1]?.length ?? 0))).toBe(true);
      expect(sent.filter((f) => f.type === "conversation.open")).toEqual([
        { type: "conversation.open", conversation_id },
      ]);
    } finally {
      client.close();
      await streaming.cleanup();
    }
  });
});
