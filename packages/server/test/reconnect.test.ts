import { PhebyClient, type ResyncResult } from "@pheby/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { SIM_APPROVAL_COMMAND } from "../src/agent/simulator/index.js";
import { RawClient, SECRET, startServer, type TestServer, violations } from "./helpers.js";

/** `ws` sockets the client opens, so the test can cut the connection under it. */
const sockets: WebSocket[] = [];
class TrackedWebSocket extends WebSocket {
  constructor(url: string) {
    super(url);
    sockets.push(this);
  }
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
  it("a client that drops while an approval is pending gets it back from resync and answers it", async () => {
    const client = new PhebyClient({
      url: ts.wsUrl,
      secret: SECRET,
      WebSocket: TrackedWebSocket,
      reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
      pingIntervalMs: 0,
    });
    client.onInvalidFrame((f) => violations.push({ raw: f.raw.slice(0, 200), error: f.error.message }));
    try {
      await client.connect();
      const { conversation_id } = await client.request({ type: "conversation.create", name: "Reconnect" });
      client.follow(conversation_id);
      const asked = client.next("approval.request", (m) => m.conversation_id === conversation_id);
      const { run_id } = await client.request({ type: "chat.send", conversation_id, text: "/sim approval" });
      const approval = await asked;

      const states: string[] = [];
      client.onState((s) => states.push(s));
      const resynced = new Promise<ResyncResult>((resolve) => client.onResync(resolve));
      sockets.at(-1)!.terminate();
      const snapshot = (await resynced).get(conversation_id)!;
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
