// @pheby/server's in-memory linked server: the client's end-to-end tests need no port. The server is
// imported from its build by path, not as a package: @pheby/server's own tests depend on
// @pheby/client, so a dependency back would make a cycle (turbo builds @pheby/server before this test).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { createInMemoryServer, createSimulatorBackend } from "../../server/dist/index.js";
import { PhebyClient, type WebSocketConstructor } from "../src/index.js";

const SECRET = "in-memory-secret-0123456789";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a chat round trip with the simulator, over no socket", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "pheby-client-memory-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await createInMemoryServer({
    secret: SECRET,
    dataDir,
    agent: createSimulatorBackend({ delayMs: 1 }),
  });
  cleanups.push(() => server.close());
  const WebSocket: WebSocketConstructor = server.WebSocket;
  const client = new PhebyClient({ url: server.url, secret: SECRET, WebSocket });
  cleanups.push(() => client.close());

  const ready = await client.connect();
  expect(ready.type).toBe("ready");
  expect(client.state).toBe("open");
  const { conversation_id } = await client.request({ type: "conversation.create", name: "memory" });
  const deltas: string[] = [];
  client.on("message.delta", (m) => {
    if (m.conversation_id === conversation_id) deltas.push(m.text);
  });
  const accepted = await client.request({ type: "chat.send", conversation_id, text: "hello there" });
  const finished = await client.next("run.finished", (m) => m.run_id === accepted.run_id);
  expect(finished.status).toBe("completed");

  const history = await client.request({ type: "conversation.open", conversation_id });
  const [user, assistant] = history.messages;
  expect(user).toMatchObject({ role: "user", text: "hello there" });
  expect(assistant?.role).toBe("assistant");
  expect(assistant?.text.length).toBeGreaterThan(0);
  // Each delta is the whole draft so far (the client stitches append deltas), so a prefix of the answer.
  expect(deltas.length).toBeGreaterThan(0);
  for (const draft of deltas) expect(assistant?.text.startsWith(draft), draft).toBe(true);
});

it("a wrong secret is refused with 4401, as over a socket", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "pheby-client-memory-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await createInMemoryServer({ secret: SECRET, dataDir, agent: createSimulatorBackend() });
  cleanups.push(() => server.close());
  const client = new PhebyClient({
    url: server.url,
    secret: "wrong",
    WebSocket: server.WebSocket,
    reconnect: false,
  });
  cleanups.push(() => client.close());
  await expect(client.connect()).rejects.toMatchObject({ code: "unauthorized" });
});
