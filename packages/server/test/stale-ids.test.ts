/**
 * The ID is checked before the choice (docs/protocol.md "Decisions"): an
 * `approval.respond` / `clarify.respond` naming an unknown, stale or answered ID gets
 * `approval_not_found` / `clarify_not_found` even when its choice or response is invalid too. A
 * live ID with an invalid answer stays `bad_request`, and the question stays pending.
 * (On main the schema check answered bad_request before the ID was looked up.)
 */
import { describe, expect, it } from "vitest";
import { createSimulatorBackend } from "../src/index.js";
import { createConversation, RawClient, send, startServer } from "./helpers.js";

const KINDS = [
  {
    type: "approval.respond",
    scenario: "/sim approval",
    asked: "approval.request",
    resolved: "approval.resolved",
    idField: "approval_id",
    notFound: "approval_not_found",
    valid: { choice: "once" },
    invalid: [
      { choice: "maybe" },
      { choice: null },
      { choice: 7 },
      {},
      { choice: "deny", reason: "x".repeat(4_001) },
    ],
  },
  {
    type: "clarify.respond",
    scenario: "/sim clarify free",
    asked: "clarify.request",
    resolved: "clarify.resolved",
    idField: "clarify_id",
    notFound: "clarify_not_found",
    valid: { response: "Ada" },
    invalid: [{ response: " \n" }, { response: 5 }, { response: null }, {}],
  },
] as const;

describe.each(KINDS)("$type with an invalid answer", (kind) => {
  it(`a live ID: bad_request, still pending; an answered or unknown one: ${kind.notFound}`, async () => {
    const ts = await startServer({ agent: createSimulatorBackend({ delayMs: 1, laterDelayMs: 20 }) });
    const client = await RawClient.connect(ts.wsUrl);
    const answer = (id: unknown, body: object) =>
      // request() matches the reply by the request_id it sends: an error echoes it.
      client.request({ type: kind.type, [kind.idField]: id, ...body }, kind.resolved);
    try {
      const runId = await send(client, await createConversation(client), kind.scenario);
      const asked = await client.nextAny((m) => m.type === kind.asked && m.run_id === runId);
      const id = (asked as unknown as Record<string, string>)[kind.idField];
      for (const bad of kind.invalid)
        expect(await answer(id, bad), JSON.stringify(bad)).toMatchObject({ error: { code: "bad_request" } });
      expect(await answer(id, kind.valid)).toMatchObject({ type: kind.resolved });
      await client.run(runId);
      for (const stale of [id, "0".repeat(32)]) {
        for (const bad of kind.invalid)
          expect(await answer(stale, bad), JSON.stringify(bad)).toMatchObject({
            error: { code: kind.notFound },
          });
      }
      // An ID that is not even a string cannot be looked up: bad_request.
      expect(await answer(5, kind.valid)).toMatchObject({ error: { code: "bad_request" } });
    } finally {
      client.close();
      await ts.cleanup();
    }
  });
});
