/**
 * The `modes` extension with a real agent, through a real Pheby server and `@pheby/client`, shared by
 * the real-agent suites: the slash commands the agent announces arrive in `commands.snapshot`, its
 * modes in `modes.snapshot`, and choosing its plan-like mode from Pheby reaches the agent (the next
 * turn's model request is made in that mode). Every frame is validated against `@pheby/protocol`.
 */
import { FEATURE_MODES } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import type { LlmRequest } from "../acp/fake-llm.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "../acp/pheby.js";
import { type AgentFixture, HELLO, type LlmFixture } from "./agents.js";

/** What the calling suite's agent announces. */
export interface ModesSpec {
  fixture: LlmFixture & Partial<Pick<AgentFixture, "options">>;
  /** The agent's backend options, when not the fixture's. */
  options?: () => AcpBackendOptions;
  /** A command the agent announces (its name, without the slash). */
  command: string;
  /** Its modes' IDs, as `modes.snapshot` lists them (in any order). */
  modes: string[];
  /** The modes `modes.snapshot` marks `auto_approves` (docs/agents.md lists them), when checked. */
  autoApproves?: string[];
  /** The plan-like mode, when it has one, and how the model's request shows a turn runs in it. */
  plan?: {
    modeId: string;
    inPlan: (request: LlmRequest) => boolean;
    /** A mode to choose first, when the agent may start in the plan-like one (Codex, in a workspace it does not trust). */
    from?: string;
  };
}

/** The text of every message of a model request, joined (system prompt included). */
export function requestText(request: LlmRequest): string {
  return request.messages
    .map((m) =>
      typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? "").join(""),
    )
    .join("\n");
}

/** Register the modes tests inside the calling suite's describe. */
export function describeModes(spec: ModesSpec): void {
  describe("modes and commands (the modes extension), through a Pheby server", () => {
    let p: PhebyAcp;
    let conv: string;

    beforeAll(async () => {
      const options = spec.options?.() ?? spec.fixture.options;
      if (!options) throw new Error("describeModes: no backend options");
      p = await startPhebyAcp(options, { features: [FEATURE_MODES] });
      await p.backend.ensureReady();
      conv = await p.create("Modes");
      expect((await p.chat(conv, "say hello", 90_000)).complete.text).toContain(HELLO);
    }, 150_000);

    afterAll(() => p?.close());

    it("its slash commands arrive in commands.snapshot, and its modes in modes.snapshot", async () => {
      // Agents announce commands right after a session opens, often outside any turn and, for the
      // session the catalogue probe opened, before it had a conversation: the server keeps them and
      // broadcasts the later ones; commands.list answers from what it kept.
      let listed = await p.client.request({ type: "commands.list", conversation_id: conv });
      for (let i = 0; i < 60 && !listed.commands.some((c) => c.name === spec.command); i++) {
        await new Promise((r) => setTimeout(r, 500));
        listed = await p.client.request({ type: "commands.list", conversation_id: conv });
      }
      expect(listed.commands.map((c) => c.name)).toContain(spec.command);
      const announced = framesOf(p.frames, "commands.snapshot").filter(
        (m) => m.conversation_id === conv && m.request_id === undefined,
      );
      for (const m of announced) expect(m.commands.map((c) => c.name)).toContain(spec.command);
      for (const c of listed.commands) expect(c.name.startsWith("/")).toBe(false);
      const modes = await p.client.request({ type: "modes.list", conversation_id: conv });
      expect(modes.modes.map((m) => m.mode_id).sort()).toEqual([...spec.modes].sort());
      expect(modes.current_mode_id).toEqual(expect.any(String));
      if (spec.autoApproves) {
        const approving = modes.modes.filter((m) => m.auto_approves).map((m) => m.mode_id);
        expect(approving.sort()).toEqual([...spec.autoApproves].sort());
      }
    });

    if (spec.plan) {
      const plan = spec.plan;
      it(`mode.set ${plan.modeId} reaches the agent: the next turn runs in it`, async () => {
        if (plan.from) {
          await p.client.request({ type: "mode.set", conversation_id: conv, mode_id: plan.from });
        }
        const before = spec.fixture.llm.requests.length;
        await p.chat(conv, "say hello", 90_000);
        const asked = spec.fixture.llm.requests.slice(before);
        expect(asked.length).toBeGreaterThan(0);
        expect(asked.some(plan.inPlan)).toBe(false);

        const changed = await p.client.request({
          type: "mode.set",
          conversation_id: conv,
          mode_id: plan.modeId,
        });
        expect(changed).toMatchObject({ type: "mode.changed", conversation_id: conv, mode_id: plan.modeId });
        const since = spec.fixture.llm.requests.length;
        const run = await p.chat(conv, "say hello", 90_000);
        expect(run.finished.status).toBe("completed");
        const planned = spec.fixture.llm.requests.slice(since);
        expect(planned.length).toBeGreaterThan(0);
        expect(planned.some(plan.inPlan), requestText(planned.at(-1)!).slice(-3000)).toBe(true);
        const modes = await p.client.request({ type: "modes.list", conversation_id: conv });
        expect(modes.current_mode_id).toBe(plan.modeId);
        expect(framesOf(p.frames, "mode.changed").some((m) => m.mode_id === plan.modeId)).toBe(true);
      });
    }
  });
}
