/**
 * The real-agent flow through a real Pheby server and `@pheby/client`, shared by every real-agent
 * suite: create a conversation, stream an answer, a shell tool whose permission is an
 * `approval.request` answered once (its `tool.event`s and its effect on disk), cancel a slow run.
 * Every frame is validated against `@pheby/protocol` (test/setup.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { messageIdOf } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "../acp/pheby.js";
import { type AgentFixture, HELLO, type LlmFixture } from "./agents.js";

/**
 * What the calling suite's agent does with the shared prompts: "say hello" (answered with
 * {@link HELLO}), "talk slowly" (a slow stream) and "please approve the note" (one shell tool call
 * that asks permission and writes `toolFile` in the work dir).
 */
export interface ThroughPhebySpec {
  /** The suite's fixture (read after the suite's own `beforeAll`). */
  fixture: LlmFixture & Partial<Pick<AgentFixture, "options">>;
  /** The agent's backend options, when not the fixture's. */
  options?: () => AcpBackendOptions;
  /** The tool's name as `tool.event` shows it (a function when it depends on the suite's paths). */
  toolName: string | (() => string);
  /** The command the tool's last `running` event must carry in `args_redacted.command`, if checked. */
  toolCommand?: () => string;
  /** The file (in the work dir) the approved tool writes "pheby" to; default `note-approved.txt`. */
  toolFile?: string;
  /** The approval choices the agent offers. */
  choices: string[];
}

/** Register the "through a Pheby server" tests inside the calling suite's describe. */
export function describeThroughPheby(spec: ThroughPhebySpec): void {
  describe("through a Pheby server and @pheby/client", () => {
    let p: PhebyAcp;

    beforeAll(async () => {
      const options = spec.options?.() ?? spec.fixture.options;
      if (!options) throw new Error("describeThroughPheby: no backend options");
      p = await startPhebyAcp(options);
      // Bring the agent up outside the client's request timeout (Python agents boot slowly).
      await p.backend.ensureReady();
    }, 120_000);

    afterAll(() => p?.close());

    it("creates a conversation and streams an answer", async () => {
      const id = await p.create("Real agent");
      const { conversations } = await p.client.request({ type: "conversation.list" });
      expect(conversations.find((c) => c.conversation_id === id)).toMatchObject({ source: "acp" });
      const run = await p.chat(id, "say hello", 90_000);
      expect(run.finished.status).toBe("completed");
      expect(run.complete.text).toContain(HELLO);
      expect(run.deltas.length).toBeGreaterThan(0);
      for (const [i, d] of run.deltas.entries()) expect(d.startsWith(run.deltas[i - 1] ?? "")).toBe(true);
      const history = await p.client.request({ type: "conversation.open", conversation_id: id });
      expect(history.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    });

    it("a shell tool's permission appears as approval.request; once runs it (running → completed, on disk)", async () => {
      const id = await p.create();
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: id,
        text: "please approve the note",
      });
      const request = await p.waitFor("approval.request", (m) => m.run_id === run_id, 90_000);
      expect(request.choices).toEqual(spec.choices);
      expect(request.conversation_id).toBe(id);
      const resolved = await p.client.request({
        type: "approval.respond",
        approval_id: request.approval_id,
        choice: "once",
      });
      expect(resolved).toMatchObject({ choice: "once", accepted: true });
      const finished = await p.waitFor("run.finished", (m) => m.run_id === run_id, 90_000);
      expect(finished.status).toBe("completed");
      const events = framesOf(p.frames, "tool.event").filter((e) => e.run_id === run_id);
      const toolName = typeof spec.toolName === "function" ? spec.toolName() : spec.toolName;
      const started = events.find((e) => e.status === "running" && e.tool_name === toolName);
      expect(started, JSON.stringify(events)).toBeDefined();
      if (spec.toolCommand) {
        const running = events.filter(
          (e) => e.tool_call_id === started!.tool_call_id && e.status === "running",
        );
        expect(running.at(-1)?.args_redacted).toMatchObject({ command: spec.toolCommand() });
      }
      expect(
        events.find((e) => e.tool_call_id === started!.tool_call_id && e.status === "completed")?.duration_ms,
      ).toEqual(expect.any(Number));
      expect(readFileSync(join(spec.fixture.work, spec.toolFile ?? "note-approved.txt"), "utf8").trim()).toBe(
        "pheby",
      );
    });

    it("cancels a slow run: exactly one cancelled run.finished, and the agent carries on", async () => {
      const id = await p.create();
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: id,
        text: "talk slowly",
      });
      await p.waitFor(
        "message.delta",
        (m) => m.message_id === messageIdOf(p.frames, run_id) && m.text.length >= 20,
        90_000,
      );
      const finished = await p.client.request({ type: "run.cancel", conversation_id: id, run_id });
      expect(finished).toMatchObject({ type: "run.finished", run_id, status: "cancelled" });
      const again = await p.chat(id, "say hello", 90_000);
      expect(again.finished.status).toBe("completed");
      expect(framesOf(p.frames, "run.finished").filter((m) => m.run_id === run_id)).toHaveLength(1);
    });
  });
}
