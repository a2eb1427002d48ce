// Answering approvals and clarifications over HTTP (what an app does from a notification), against the
// real server on port 0. The server is imported from its build by path, not as a package: see
// in-memory.test.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPhebyServer, createSimulatorBackend, type PhebyServer } from "../../server/dist/index.js";
import { answerApproval, answerClarification, PhebyClient } from "../src/index.js";

const SECRET = "http-answers-secret-0123456789";
let server: PhebyServer;
let dataDir: string;
let url: string;
let client: PhebyClient;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "pheby-client-answers-"));
  server = createPhebyServer({ secret: SECRET, dataDir, agent: createSimulatorBackend({ delayMs: 1 }) });
  const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
  url = `ws://127.0.0.1:${port}/ws`;
  client = new PhebyClient({ url, secret: SECRET });
  await client.connect();
});

afterAll(async () => {
  client.close();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Start a run with `text` in a new conversation; resolves with the conversation and its run. */
async function start(text: string) {
  const { conversation_id } = await client.request({ type: "conversation.create" });
  const accepted = await client.request({ type: "chat.send", conversation_id, text });
  return { conversation_id, run_id: accepted.run_id };
}

describe("HTTP answers", () => {
  it("answerApproval: the approval resolves as approval.respond would, and the run goes on", async () => {
    const asked = client.next("approval.request");
    const { conversation_id, run_id } = await start("/sim approval");
    const { approval_id } = await asked;
    const resolved = client.next("approval.resolved", (m) => m.approval_id === approval_id);
    const finished = client.next("run.finished", (m) => m.run_id === run_id);
    const done = client.next("message.complete", (m) => m.conversation_id === conversation_id);

    const answer = await answerApproval({ url, secret: SECRET }, approval_id, "deny", "not now");
    expect(answer).toEqual({ approval_id, conversation_id, choice: "deny", accepted: true });
    expect(await resolved).toMatchObject({ approval_id, choice: "deny", accepted: true });
    expect((await done).text).toContain('Your reason: "not now"');
    expect((await finished).status).toBe("completed");

    // Answered: the ID is gone.
    await expect(answerApproval({ url, secret: SECRET }, approval_id, "once")).rejects.toMatchObject({
      code: "approval_not_found",
      status: 404,
    });
  });

  it("answerClarification: the answer reaches the agent", async () => {
    const asked = client.next("clarify.request");
    const { conversation_id } = await start("/sim clarify");
    const { clarify_id } = await asked;
    const done = client.next("message.complete", (m) => m.conversation_id === conversation_id);

    const answer = await answerClarification({ url, secret: SECRET }, clarify_id, "staging");
    expect(answer).toEqual({ clarify_id, conversation_id, accepted: true });
    expect((await done).text).toContain('You answered: "staging"');
  });

  it("typed errors: a wrong secret is unauthorized (401), an unknown ID not found (404), a bad body bad_request (400)", async () => {
    await expect(answerClarification({ url, secret: "wrong" }, "c-unknown", "x")).rejects.toMatchObject({
      code: "unauthorized",
      status: 401,
    });
    await expect(answerClarification({ url, secret: SECRET }, "c-unknown", "x")).rejects.toMatchObject({
      code: "clarify_not_found",
      status: 404,
    });
    const asked = client.next("clarify.request");
    await start("/sim clarify");
    const { clarify_id } = await asked;
    await expect(answerClarification({ url, secret: SECRET }, clarify_id, "   ")).rejects.toMatchObject({
      code: "bad_request",
      status: 400,
    });
    await answerClarification({ url, secret: SECRET }, clarify_id, "production");
  });
});
