import { DEFAULT_FEATURES, PhebyClient, type PhebyClientOptions, type ResyncResult } from "@pheby/client";
import { type ServerMessage, type ServerMessageOf, stripDisabledFields } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { SIM_APPROVAL_COMMAND } from "../src/agent/simulator/index.js";
import { RawClient, SECRET, startServer, type TestServer, violations } from "./helpers.js";

/** `ws` sockets the client opens, so the test can cut the connection under it. */
const sockets: WebSocket[] = [];
/** While true, the client's reconnect attempts are refused (they go to a port nobody listens on). */
let offline = false;
class TrackedWebSocket extends WebSocket {
  /** A deaf socket drops what it receives: a reply lost on the way. */
  deaf = false;
  constructor(url: string) {
    super(offline ? "ws://127.0.0.1:1/ws" : url);
    sockets.push(this);
  }
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (this.deaf && event === "message") return false;
    return super.emit(event, ...args);
  }
}

/** A client of the shared server that reconnects fast and reports invalid frames as violations. */
async function trackedClient(options: Partial<PhebyClientOptions> = {}): Promise<PhebyClient> {
  const client = new PhebyClient({
    url: ts.wsUrl,
    secret: SECRET,
    WebSocket: TrackedWebSocket,
    reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
    pingIntervalMs: 0,
    ...options,
  });
  client.onInvalidFrame((f) => violations.push({ raw: f.raw.slice(0, 200), error: f.error.message }));
  await client.connect();
  return client;
}

/** Drop the client's connection and keep it offline until the returned function is called. */
async function dropped(client: PhebyClient): Promise<() => void> {
  offline = true;
  const reconnecting = new Promise<void>((resolve) => {
    const off = client.onState((s) => {
      if (s !== "reconnecting") return;
      off();
      resolve();
    });
  });
  sockets.at(-1)!.terminate();
  await reconnecting;
  return () => {
    offline = false;
  };
}

/** Without resume's fields and anybody's request_id: what every connection's copy shares. */
function plain(frame: ServerMessage): ServerMessage {
  const { request_id: _r, ...rest } = structuredClone(frame) as ServerMessage & Record<string, unknown>;
  stripDisabledFields(rest, frame.type, new Set());
  return rest as ServerMessage;
}

let ts: TestServer;
let other: RawClient;
beforeAll(async () => {
  ts = await startServer();
  other = await RawClient.connect(ts.wsUrl);
});
afterAll(async () => {
  other.close();
  await ts.cleanup();
});

describe("reconnect recovery with @pheby/client", () => {
  it("a client without resume that drops while an approval is pending gets it back from the snapshot and answers it", async () => {
    const client = await trackedClient({ features: DEFAULT_FEATURES.filter((f) => f !== "resume") });
    try {
      const { conversation_id } = await client.request({ type: "conversation.create", name: "Reconnect" });
      client.follow(conversation_id);
      const asked = client.next("approval.request", (m) => m.conversation_id === conversation_id);
      const { run_id } = await client.request({ type: "chat.send", conversation_id, text: "/sim approval" });
      const approval = await asked;

      const states: string[] = [];
      client.onState((s) => states.push(s));
      const resynced = new Promise<ResyncResult>((resolve) => client.onResync(resolve));
      sockets.at(-1)!.terminate();
      const snapshot = (await resynced).get(conversation_id) as ServerMessageOf<"conversation.history">;
      expect(states).toEqual(["reconnecting", "open"]);

      // The snapshot alone rebuilds the screen: the paused run, its running tool, the pending approval.
      const { type: _type, ...pending } = approval;
      expect(snapshot.approvals).toEqual([pending]);
      expect(snapshot.clarifications).toEqual([]);
      expect(snapshot.run).toMatchObject({ run_id, status: "running" });
      expect(snapshot.tools).toEqual([
        expect.objectContaining({
          tool_name: "shell",
          status: "running",
          args_redacted: { command: SIM_APPROVAL_COMMAND },
        }),
      ]);
      expect(snapshot.messages.map((m) => m.text)).toEqual(["/sim approval"]);

      const finished = client.next("run.finished", (m) => m.run_id === run_id);
      const resolved = await client.request({
        type: "approval.respond",
        approval_id: approval.approval_id,
        choice: "session",
      });
      expect(resolved).toMatchObject({
        approval_id: approval.approval_id,
        choice: "session",
        accepted: true,
      });
      // The other client saw the same single resolution, with the reconnected client's request_id.
      const seen = await other.nextAny(
        (m) => m.type === "approval.resolved" && m.approval_id === approval.approval_id,
      );
      expect(seen).toEqual(resolved);
      expect(await finished).toMatchObject({ status: "completed" });
      const after = await client.request({ type: "conversation.open", conversation_id });
      expect(after.approvals).toEqual([]);
      expect(after.run).toBeNull();
      expect(after.messages.at(-1)?.text).toBe(`Approved (session): I ran \`${SIM_APPROVAL_COMMAND}\`.`);
    } finally {
      client.close();
    }
  });
});

describe("reconnect with resume (@pheby/client's default)", () => {
  it("resumes a followed conversation: handlers get the missed events once, in order, and the answer is conversation.resumed", async () => {
    const client = await trackedClient();
    try {
      const { conversation_id } = await client.request({ type: "conversation.create", name: "Resume" });
      client.follow(conversation_id);
      await client.request({ type: "conversation.open", conversation_id });
      const seen: ServerMessage[] = [];
      // conversation.status is the inbox list's event: no seq, never replayed (it is not missed); the
      // simulator's usage.updated after each turn (activity) never reaches the v1 observer compared with.
      client.on("*", (m) => {
        if (m.type === "conversation.status" || m.type === "usage.updated") return;
        if ((m as { conversation_id?: string }).conversation_id === conversation_id) seen.push(m);
      });
      const back = await dropped(client);
      // While the phone is away: a whole run and a rename, seen by another client.
      const runId = await other.ok(
        { type: "chat.send", conversation_id, text: "while away" },
        "run.accepted",
      );
      await other.run(runId.run_id);
      await other.ok(
        { type: "conversation.rename", conversation_id, name: "Renamed" },
        "conversation.renamed",
      );
      // (The rename's reply is the other client's own; its broadcast is the event.)
      const missed = other.frames.filter(
        (f) =>
          (f as { conversation_id?: string }).conversation_id === conversation_id &&
          !(f.type === "conversation.renamed" && "request_id" in f) &&
          other.frames.indexOf(f) >=
            other.frames.findIndex((g) => g.type === "run.accepted" && g.run_id === runId.run_id),
      );

      const resynced = new Promise<ResyncResult>((resolve) => client.onResync(resolve));
      const resumed = client.next("conversation.resumed", (m) => m.conversation_id === conversation_id);
      back();
      // Resumed: nothing to replace, so not among the snapshots; the answer reached handlers.
      expect((await resynced).has(conversation_id)).toBe(false);
      const answer = await resumed;
      expect(answer).toMatchObject({ type: "conversation.resumed", conversation_id });
      await client.request({ type: "ping" });
      // The handlers saw what the other client saw (deltas collapsed to the latest draft), once each.
      const collapse = (frames: ServerMessage[]) =>
        frames.filter((f, i) => !(f.type === "message.delta" && frames[i + 1]?.type === "message.delta"));
      expect(seen.filter((m) => m.type !== "conversation.resumed").map(plain)).toEqual(
        collapse(missed.map(plain)),
      );
      expect(client.position(conversation_id)).toBe(
        (answer as ServerMessageOf<"conversation.resumed">).to_seq,
      );
    } finally {
      client.close();
    }
  });

  it("a send whose reply was lost in a drop is sent again after the reconnect and gets the first outcome, once", async () => {
    const client = await trackedClient();
    try {
      const { conversation_id } = await client.request({ type: "conversation.create", name: "Retry" });
      client.follow(conversation_id);
      await client.request({ type: "conversation.open", conversation_id });
      offline = true;
      const socket = sockets.at(-1) as TrackedWebSocket;
      socket.deaf = true;
      const sent = client.request({ type: "chat.send", conversation_id, text: "only once" });
      // The send is handled, its reply lost, then the connection goes.
      const first = await other.next("run.accepted", (m) => m.conversation_id === conversation_id);
      await other.run(first.run_id);
      socket.terminate();
      offline = false;
      const reply = await sent;
      expect(reply).toMatchObject({ type: "run.accepted", run_id: first.run_id });
      const history = await client.request({ type: "conversation.open", conversation_id });
      expect(history.messages.filter((m) => m.role === "user").map((m) => m.text)).toEqual(["only once"]);
      expect(history.messages[0]!.client_message_id).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      client.close();
    }
  });

  it("keeps sends made while disconnected in an outbox and sends them once the connection is back", async () => {
    const client = await trackedClient();
    try {
      const { conversation_id } = await client.request({ type: "conversation.create", name: "Outbox" });
      const back = await dropped(client);
      const accepted: string[] = [];
      client.on("run.accepted", (m) => accepted.push(m.run_id));
      const one = client.request({ type: "chat.send", conversation_id, text: "written on the train" });
      // Other requests do not wait: they need the answer now.
      await expect(client.request({ type: "conversation.list" })).rejects.toMatchObject({
        code: "connection_closed",
      });
      back();
      const reply = await one;
      expect(reply.type).toBe("run.accepted");
      await other.run(reply.run_id);
      expect(accepted).toEqual([reply.run_id]);
    } finally {
      client.close();
    }
  });
});
