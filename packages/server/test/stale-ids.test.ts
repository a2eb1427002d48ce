/**
 * The ID is checked before the choice (issue 23 §4, docs/protocol.md "Decisions"): an
 * `approval.respond` / `clarify.respond` naming an unknown, stale or answered ID gets
 * `approval_not_found` / `clarify_not_found` even when its choice or response is invalid too. A
 * live ID with an invalid answer stays `bad_request`, and the question stays pending.
 */
import { describe, expect, it } from "vitest";
import { createSimulatorBackend } from "../src/index.js";
import { createConversation, RawClient, send, startServer } from "./helpers.js";

const INVALID_CHOICES = [
  { choice: "maybe" },
  { choice: null },
  { choice: 7 },
  {},
  { choice: "deny", reason: "x".repeat(4_001) },
];
const INVALID_RESPONSES = [{ response: " \n" }, { response: 5 }, { response: null }, {}];

async function server() {
  const ts = await startServer({ agent: createSimulatorBackend({ delayMs: 1, laterDelayMs: 20 }) });
  const client = await RawClient.connect(ts.wsUrl);
  return { ts, client };
}

describe("a stale ID with an invalid answer", () => {
  // Failed on main: the schema check answered bad_request before the ID was looked up.
  it("approval.respond: approval_not_found (unknown and answered IDs)", async () => {
    const { ts, client } = await server();
    try {
      const id = await createConversation(client);
      const runId = await send(client, id, "/sim approval");
      const asked = await client.nextAny((m) => m.type === "approval.request" && m.run_id === runId);
      if (asked.type !== "approval.request") throw new Error("no approval.request");
      // A live ID with an invalid choice: bad_request, and the approval is still pending.
      for (const bad of INVALID_CHOICES) {
        const r = await client.request(
          { type: "approval.respond", approval_id: asked.approval_id, ...bad },
          "approval.resolved",
        );
        expect(r, JSON.stringify(bad)).toMatchObject({ type: "error", error: { code: "bad_request" } });
      }
      await client.ok(
        { type: "approval.respond", approval_id: asked.approval_id, choice: "once" },
        "approval.resolved",
      );
      await client.run(runId);
      for (const approval_id of [asked.approval_id, "0".repeat(32)]) {
        for (const bad of INVALID_CHOICES) {
          // request() matches the reply by the request_id it sends: the error echoes it.
          const r = await client.request(
            { type: "approval.respond", approval_id, ...bad },
            "approval.resolved",
          );
          expect(r, JSON.stringify(bad)).toMatchObject({
            type: "error",
            error: { code: "approval_not_found" },
          });
        }
      }
      // An ID that is not even a string cannot be looked up: bad_request.
      const r = await client.request(
        { type: "approval.respond", approval_id: 5, choice: "once" },
        "approval.resolved",
      );
      expect(r).toMatchObject({ type: "error", error: { code: "bad_request" } });
    } finally {
      client.close();
      await ts.cleanup();
    }
  });

  it("clarify.respond: clarify_not_found (unknown and answered IDs)", async () => {
    const { ts, client } = await server();
    try {
      const id = await createConversation(client);
      const runId = await send(client, id, "/sim clarify free");
      const asked = await client.nextAny((m) => m.type === "clarify.request" && m.run_id === runId);
      if (asked.type !== "clarify.request") throw new Error("no clarify.request");
      for (const bad of INVALID_RESPONSES) {
        const r = await client.request(
          { type: "clarify.respond", clarify_id: asked.clarify_id, ...bad },
          "clarify.resolved",
        );
        expect(r, JSON.stringify(bad)).toMatchObject({ type: "error", error: { code: "bad_request" } });
      }
      await client.ok(
        { type: "clarify.respond", clarify_id: asked.clarify_id, response: "Ada" },
        "clarify.resolved",
      );
      await client.run(runId);
      for (const clarify_id of [asked.clarify_id, "nope"]) {
        for (const bad of INVALID_RESPONSES) {
          const r = await client.request({ type: "clarify.respond", clarify_id, ...bad }, "clarify.resolved");
          expect(r, JSON.stringify(bad)).toMatchObject({
            type: "error",
            error: { code: "clarify_not_found" },
          });
        }
      }
    } finally {
      client.close();
      await ts.cleanup();
    }
  });
});
