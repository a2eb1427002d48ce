import { REASONING_EFFORTS, type ServerMessageOf } from "@pheby/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import { SIM_CATALOGUE } from "../src/agent/simulator/catalogue.js";
import { SIM_APPROVAL_COMMAND } from "../src/agent/simulator/index.js";
import {
  createConversation,
  RawClient,
  send,
  startServer,
  tempDir,
  useServerWithTwoClients,
} from "./helpers.js";

const env = useServerWithTwoClients({ transport: "memory" });
let a: RawClient; // the requester
let b: RawClient; // another client, who sees the broadcasts
beforeAll(() => {
  ({ a, b } = env);
});

/** `a` sends a *.set; returns its reply after checking that b got the same event without request_id. */
async function change<T extends "yolo.changed" | "model.changed" | "reasoning.changed">(
  frame: Record<string, unknown>,
  type: T,
): Promise<ServerMessageOf<T>> {
  const replied = await a.ok(frame, type);
  const { request_id, ...event } = replied;
  expect(request_id).toBeDefined();
  const isEvent = (m: unknown) => JSON.stringify(m) === JSON.stringify(event);
  // The requester receives both the reply and the broadcast.
  await a.nextAny(isEvent);
  await b.nextAny(isEvent);
  return replied;
}

/** The final text of a plain message's reply. */
async function replyText(client: RawClient, conversationId: string, text = "which model?") {
  const runId = await send(client, conversationId, text);
  const frames = await client.run(runId);
  return (frames.find((m) => m.type === "message.complete") as ServerMessageOf<"message.complete">).text;
}

async function expectError(frame: Record<string, unknown>, code: string) {
  const r = await a.request(frame, "yolo.changed");
  expect(r, JSON.stringify(frame)).toMatchObject({ type: "error", error: { code } });
}

const missing = "0".repeat(32);

describe("YOLO", () => {
  it("is off by default, conversation-scoped, replied with request_id and broadcast without", async () => {
    const id = await createConversation(a);
    const other = await createConversation(a);
    expect(await a.ok({ type: "yolo.current", conversation_id: id }, "yolo.snapshot")).toMatchObject({
      enabled: false,
      scope: "conversation",
      conversation_id: id,
    });
    const changed = await change({ type: "yolo.set", conversation_id: id, enabled: true }, "yolo.changed");
    expect(changed).toMatchObject({ enabled: true, scope: "conversation", conversation_id: id });
    expect((await a.ok({ type: "yolo.current", conversation_id: id }, "yolo.snapshot")).enabled).toBe(true);
    expect((await a.ok({ type: "yolo.current", conversation_id: other }, "yolo.snapshot")).enabled).toBe(
      false,
    );
  });

  it("enabled must be a JSON boolean; unknown conversations are conversation_not_found", async () => {
    const id = await createConversation(a);
    for (const enabled of ["true", 1, null, undefined]) {
      await expectError({ type: "yolo.set", conversation_id: id, enabled }, "bad_request");
    }
    await expectError(
      { type: "yolo.set", conversation_id: missing, enabled: true },
      "conversation_not_found",
    );
    await expectError({ type: "yolo.current", conversation_id: missing }, "conversation_not_found");
    expect((await a.ok({ type: "yolo.current", conversation_id: id }, "yolo.snapshot")).enabled).toBe(false);
  });

  it("while on, approvals are answered once by the server and never broadcast; off asks again", async () => {
    const id = await createConversation(a);
    await change({ type: "yolo.set", conversation_id: id, enabled: true }, "yolo.changed");
    const runId = await send(a, id, "/sim approval");
    const frames = await b.run(runId);
    expect(b.frames.some((m) => m.type === "approval.request" && m.run_id === runId)).toBe(false);
    expect(a.frames.some((m) => m.type === "approval.request" && m.run_id === runId)).toBe(false);
    expect(frames.find((m) => m.type === "message.complete")).toMatchObject({
      text: `Approved (once): I ran \`${SIM_APPROVAL_COMMAND}\`.`,
    });
    expect(
      frames.filter((m) => m.type === "tool.event").map((m) => m.type === "tool.event" && m.status),
    ).toEqual(["running", "completed"]);
    // "once" is not remembered: with YOLO off the agent asks again.
    await change({ type: "yolo.set", conversation_id: id, enabled: false }, "yolo.changed");
    const asked = await send(a, id, "/sim approval");
    const approval = await b.next("approval.request", (m) => m.run_id === asked);
    await b.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "deny" },
      "approval.resolved",
    );
    await a.run(asked);
  });
});

describe("models", () => {
  it("models.list comes from the backend's catalogue, with the agent default as the global current model", async () => {
    // Global settings are shared by the whole file, so this test reads them before any model.set.
    const list = await a.ok({ type: "models.list" }, "models.snapshot");
    expect(list.providers).toEqual(
      SIM_CATALOGUE.providers.map((p) => ({
        slug: p.slug,
        name: p.name,
        is_current: p.slug === SIM_CATALOGUE.defaultModel!.provider,
        models: p.models,
        total_models: p.models.length,
      })),
    );
    expect(list).toMatchObject({
      current_model: SIM_CATALOGUE.defaultModel!.model,
      current_provider: SIM_CATALOGUE.defaultModel!.provider,
      scope: "global",
      supported_reasoning_efforts: REASONING_EFFORTS.filter((e) => e !== "none"),
    });
    const current = await a.ok({ type: "models.current" }, "model.current");
    expect(current).toMatchObject({ model: "sim/fast-1", provider: "simcloud", scope: "global" });
    expect(current.conversation_id).toBeUndefined();
  });

  // `none` is "thinking off", not a level: the spec's example list leaves it out, and ours once carried it.
  it("models.snapshot lists the efforts as the spec's example does, without none; reasoning.set none stays accepted", async () => {
    const id = await createConversation(a);
    const list = await a.ok({ type: "models.list", conversation_id: id }, "models.snapshot");
    expect(list.supported_reasoning_efforts).toEqual(REASONING_EFFORTS.filter((e) => e !== "none"));
    const off = await change(
      { type: "reasoning.set", effort: "none", conversation_id: id },
      "reasoning.changed",
    );
    expect(off).toMatchObject({ effort: "none", scope: "conversation" });
    const current = await a.ok({ type: "reasoning.current", conversation_id: id }, "reasoning.snapshot");
    // reasoning.snapshot keeps none among its levels, as the spec's example of it does.
    expect(current).toMatchObject({
      effort: "none",
      enabled: false,
      supported_efforts: [...REASONING_EFFORTS],
    });
  });

  it("global and conversation scopes, broadcast; the next reply says which model it used", async () => {
    const id = await createConversation(a);
    const other = await createConversation(a);
    const global = await change({ type: "model.set", model: "sim/pro-2" }, "model.changed");
    expect(global).toMatchObject({ model: "sim/pro-2", provider: "simcloud", scope: "global" });
    expect(global.conversation_id).toBeUndefined();
    const own = await change(
      { type: "model.set", model: "local/coder-7b", provider: "simlocal", conversation_id: id },
      "model.changed",
    );
    expect(own).toMatchObject({
      model: "local/coder-7b",
      provider: "simlocal",
      scope: "conversation",
      conversation_id: id,
    });

    expect(await a.ok({ type: "models.current", conversation_id: id }, "model.current")).toMatchObject({
      model: "local/coder-7b",
      provider: "simlocal",
      scope: "conversation",
      conversation_id: id,
    });
    const inherited = await a.ok({ type: "models.current", conversation_id: other }, "model.current");
    expect(inherited).toMatchObject({ model: "sim/pro-2", provider: "simcloud", scope: "global" });
    expect(inherited.conversation_id).toBeUndefined();
    const list = await a.ok({ type: "models.list", conversation_id: id }, "models.snapshot");
    expect(list).toMatchObject({
      current_model: "local/coder-7b",
      current_provider: "simlocal",
      scope: "conversation",
    });
    expect(list.providers.filter((p) => p.is_current).map((p) => p.slug)).toEqual(["simlocal"]);

    expect(await replyText(a, id)).toContain("[model: local/coder-7b (simlocal), reasoning:");
    expect(await replyText(a, other)).toContain("[model: sim/pro-2 (simcloud), reasoning:");
  });

  it("an unknown model or provider is bad_request; an unknown conversation is conversation_not_found", async () => {
    const id = await createConversation(a);
    await expectError({ type: "model.set", model: "gpt-imaginary" }, "bad_request");
    await expectError({ type: "model.set", model: "sim/pro-2", provider: "simlocal" }, "bad_request");
    await expectError(
      { type: "model.set", model: "sim/pro-2", provider: "nope", conversation_id: id },
      "bad_request",
    );
    await expectError({ type: "model.set", model: "" }, "bad_request");
    await expectError(
      { type: "model.set", model: "sim/pro-2", conversation_id: missing },
      "conversation_not_found",
    );
    await expectError({ type: "models.current", conversation_id: missing }, "conversation_not_found");
    await expectError({ type: "models.list", conversation_id: missing }, "conversation_not_found");
    expect((await a.ok({ type: "models.current", conversation_id: id }, "model.current")).scope).toBe(
      "global",
    );
  });

  it("a change during a run applies from the next turn", async () => {
    const id = await createConversation(a);
    await change({ type: "model.set", model: "sim/reasoner-3", conversation_id: id }, "model.changed");
    const runId = await send(a, id, "/sim approval");
    const approval = await a.next("approval.request", (m) => m.run_id === runId);
    // The run is paused mid-turn: change the model, then let it finish.
    await change({ type: "model.set", model: "local/tiny-1b", conversation_id: id }, "model.changed");
    await a.ok(
      { type: "approval.respond", approval_id: approval.approval_id, choice: "deny" },
      "approval.resolved",
    );
    await a.run(runId);
    expect(await replyText(a, id)).toContain("[model: local/tiny-1b (simlocal),");
  });
});

describe("reasoning effort", () => {
  it("scopes mirror model.set; none disables thinking; the next reply says which effort it used", async () => {
    const id = await createConversation(a);
    const other = await createConversation(a);
    const global = await change({ type: "reasoning.set", effort: "high" }, "reasoning.changed");
    expect(global).toMatchObject({ effort: "high", scope: "global" });
    expect(global.conversation_id).toBeUndefined();
    const own = await change(
      { type: "reasoning.set", effort: "none", conversation_id: id },
      "reasoning.changed",
    );
    expect(own).toMatchObject({ effort: "none", scope: "conversation", conversation_id: id });

    expect(
      await a.ok({ type: "reasoning.current", conversation_id: id }, "reasoning.snapshot"),
    ).toMatchObject({
      effort: "none",
      enabled: false,
      scope: "conversation",
      conversation_id: id,
      supported_efforts: [...REASONING_EFFORTS],
    });
    expect(
      await a.ok({ type: "reasoning.current", conversation_id: other }, "reasoning.snapshot"),
    ).toMatchObject({
      effort: "high",
      enabled: true,
      scope: "global",
    });
    expect(await replyText(a, id)).toContain("reasoning: none (thinking off)]");
    expect(await replyText(a, other)).toContain("reasoning: high]");
  });

  it("invalid values are bad_request; unknown conversations are conversation_not_found", async () => {
    for (const effort of ["extreme", "", null, 3, "HIGH"]) {
      await expectError({ type: "reasoning.set", effort }, "bad_request");
    }
    await expectError(
      { type: "reasoning.set", effort: "low", conversation_id: missing },
      "conversation_not_found",
    );
    await expectError({ type: "reasoning.current", conversation_id: missing }, "conversation_not_found");
  });
});

describe("persistence", () => {
  it("YOLO, global defaults and conversation overrides survive a restart", async () => {
    const dataDir = tempDir();
    const first = await startServer({ dataDir, transport: "memory" });
    const c = await RawClient.connect(first.wsUrl);
    const id = await createConversation(c);
    const plain = await createConversation(c);
    await c.ok({ type: "yolo.set", conversation_id: id, enabled: true }, "yolo.changed");
    await c.ok({ type: "model.set", model: "local/tiny-1b" }, "model.changed");
    await c.ok({ type: "model.set", model: "sim/reasoner-3", conversation_id: id }, "model.changed");
    await c.ok({ type: "reasoning.set", effort: "minimal" }, "reasoning.changed");
    await c.ok({ type: "reasoning.set", effort: "ultra", conversation_id: id }, "reasoning.changed");
    c.close();
    await first.close();

    const second = await startServer({ dataDir, transport: "memory" });
    const d = await RawClient.connect(second.wsUrl);
    try {
      expect((await d.ok({ type: "yolo.current", conversation_id: id }, "yolo.snapshot")).enabled).toBe(true);
      expect((await d.ok({ type: "yolo.current", conversation_id: plain }, "yolo.snapshot")).enabled).toBe(
        false,
      );
      expect(await d.ok({ type: "models.current" }, "model.current")).toMatchObject({
        model: "local/tiny-1b",
        provider: "simlocal",
        scope: "global",
      });
      expect(await d.ok({ type: "models.current", conversation_id: id }, "model.current")).toMatchObject({
        model: "sim/reasoner-3",
        scope: "conversation",
      });
      expect(await d.ok({ type: "reasoning.current" }, "reasoning.snapshot")).toMatchObject({
        effort: "minimal",
        scope: "global",
      });
      expect(
        await d.ok({ type: "reasoning.current", conversation_id: id }, "reasoning.snapshot"),
      ).toMatchObject({
        effort: "ultra",
        scope: "conversation",
      });
      // YOLO still applies after the restart.
      const runId = await send(d, id, "/sim approval");
      const frames = await d.run(runId);
      expect(d.frames.some((m) => m.type === "approval.request")).toBe(false);
      expect(frames.find((m) => m.type === "message.complete")).toMatchObject({
        text: expect.stringContaining("Approved (once)"),
      });
      expect(await replyText(d, id)).toContain("[model: sim/reasoner-3 (simcloud), reasoning: ultra]");
    } finally {
      d.close();
      await second.cleanup();
    }
  });
});
