/**
 * The `activity` and `thoughts` extensions with a real agent, through a real Pheby server and
 * `@pheby/client`: the fake model drives the agent's own tools (write a new file, change it, run a shell
 * command, update its plan) and thinks before it answers. What the agent reports arrives as the suite
 * declares it (docs/agents.md's per-agent table): diffs relative to the path base (the work dir, not a git
 * repository) in the call's `tool.event`s and/or its approval's `preview`, the command's output redacted,
 * the plan, the thinking, the context usage; and no frame the client receives names a directory of the
 * server (its data dir, the work dir's absolute path, the agent's home). Every frame is validated against
 * `@pheby/protocol`.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  applyDelta,
  FEATURE_ACTIVITY,
  FEATURE_THOUGHTS,
  type ServerMessage,
  type ServerMessageOf,
  type ToolContentBlock,
} from "@pheby/protocol";
import { runFrames } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "../acp/pheby.js";
import { type AgentFixture, type LlmFixture, THINK_PROMPT, THOUGHT_ANSWER } from "./agents.js";

/** The prompt the calling suite's fake model answers with its agent's file-writing tool: {@link ACTIVITY_AFTER} into a new file. */
export const EDIT_PROMPT = "please edit the activity file";
/** The prompt answered with the agent's edit tool on that file: `TWO` becomes `2` ({@link ACTIVITY_CHANGED}). */
export const CHANGE_PROMPT = "please change the activity file";
/** The prompt answered with the agent's shell tool running {@link shellCommand}. */
export const SHELL_PROMPT = "please show the activity output";
/** The prompt answered with the agent's plan tool, setting {@link PLAN_STEPS}. */
export const PLAN_PROMPT = "please plan the activity";
/**
 * The file the edit writes, new in the work dir (agents that refuse to overwrite a file they have not
 * read, as Qwen Code, write a new one at once), and its text, before and after the change.
 */
export const ACTIVITY_FILE = "activity.txt";
export const ACTIVITY_AFTER = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n";
/** The change touches line 2 of 8: a whole-file diff and a diff of the agent's fragment differ. */
export const ACTIVITY_CHANGED = ACTIVITY_AFTER.replace("TWO", "2");
/** The secret the shell command prints, as a `NAME=value` line: it must arrive redacted. */
const SECRET_TAIL = "abcdef1234567890abcdef";
export const SHELL_SECRET = `sk-${SECRET_TAIL}`;
/**
 * The command the shell tool runs: it prints the working directory (the work dir's absolute path,
 * which must not arrive as such), a plain line and a credential line. The line and the secret are put
 * together by the command, so only its output holds them (the command itself reaches v1 fields as the
 * agent gives it, and agents show it beside the output).
 */
export const shellCommand = () => `pwd; printf 'out %s\\nAPI_TOKEN=sk-%s\\n' line ${SECRET_TAIL}`;
/** The plan the plan tool sets (each agent's tool takes it in its own shape). */
export const PLAN_STEPS = [
  { content: "Find the bug", status: "completed" },
  { content: "Fix it", status: "in_progress" },
] as const;

/** Where a diff arrives, and how: the whole file's diff, or one of the fragments the agent sent. */
type DiffShape = "whole" | "fragment";

/** What the calling suite's agent does with the prompts above (see docs/agents.md, "Tool detail"). */
export interface ActivitySpec {
  fixture: LlmFixture & Partial<Pick<AgentFixture, "options">>;
  options?: () => AcpBackendOptions;
  /** Where the new file's diff arrives: the call's `tool.event`s (default) and/or its approval's `preview`. */
  write?: { events: boolean; preview?: boolean };
  /**
   * The change of the file, when the suite scripts it: the shape of its diff in the `tool.event`s and in
   * the approval's preview (absent: none there), and a mode to choose first (Codex cannot read a file in
   * its sandboxed modes without bubblewrap).
   */
  change?: { events?: DiffShape; preview?: DiffShape; mode?: string };
  /**
   * Whether the shell command's output arrives as text content of its `execute` call, when the suite
   * scripts {@link SHELL_PROMPT} (false: the call arrives, its output does not).
   */
  shell?: boolean;
  /** Whether the model's reasoning arrives as a thought (`thought.delta` / `thought.complete`), if checked. */
  thoughts?: boolean;
  /** Whether the plan tool's steps arrive as `plan.updated`, when the suite scripts {@link PLAN_PROMPT}. */
  plan?: boolean;
  /** Whether the agent reports its context usage (`usage.updated`), and with a cost, if checked. */
  usage?: { cost: boolean } | false;
}

/** Register the activity tests inside the calling suite's describe. */
export function describeActivity(spec: ActivitySpec): void {
  describe("tool detail, plan, thoughts and usage (activity, thoughts), through a Pheby server", () => {
    let p: PhebyAcp;
    let options: AcpBackendOptions;
    /** The conversation of the write, continued by the change (agents edit only files they know). */
    let conv: string;

    beforeAll(async () => {
      const chosen = spec.options?.() ?? spec.fixture.options;
      if (!chosen) throw new Error("describeActivity: no backend options");
      options = chosen;
      p = await startPhebyAcp(options, { features: [FEATURE_ACTIVITY, FEATURE_THOUGHTS] });
      await p.backend.ensureReady();
    }, 150_000);

    afterAll(() => p?.close());

    /** Run `text` in `conversation` (a new one by default), answering each approval once; its frames. */
    async function run(text: string, conversation?: string) {
      const id = conversation ?? (await p.create("Activity"));
      const { run_id } = await p.client.request({ type: "chat.send", conversation_id: id, text });
      const answered = new Set<string>();
      for (;;) {
        const finished = framesOf(p.frames, "run.finished").find((m) => m.run_id === run_id);
        if (finished) {
          expect(finished.status).toBe("completed");
          break;
        }
        for (const a of framesOf(p.frames, "approval.request")) {
          if (a.run_id !== run_id || answered.has(a.approval_id)) continue;
          answered.add(a.approval_id);
          await p.client.request({ type: "approval.respond", approval_id: a.approval_id, choice: "once" });
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      const events = framesOf(p.frames, "tool.event").filter((e) => e.run_id === run_id);
      const approvals = framesOf(p.frames, "approval.request").filter((a) => a.run_id === run_id);
      return { id, runId: run_id, events, approvals };
    }

    /** The diff blocks of the run's tool events and of its approvals' previews. */
    const diffsOf = (blocks: ToolContentBlock[]) =>
      blocks.filter((b): b is Extract<ToolContentBlock, { type: "diff" }> => b.type === "diff");
    const eventDiffs = (events: ServerMessageOf<"tool.event">[]) =>
      diffsOf(events.flatMap((e) => e.content ?? []));
    const previewDiffs = (approvals: ServerMessageOf<"approval.request">[]) =>
      diffsOf(approvals.flatMap((a) => a.preview ?? []));

    const serverDirs = () => [spec.fixture.work, p.ts.dataDir, options.env?.HOME];

    it("its write tool's diff arrives relative to the path base, and no frame names a server directory", async () => {
      const work = spec.fixture.work;
      rmSync(join(work, ACTIVITY_FILE), { force: true });
      const { id, events, approvals } = await run(EDIT_PROMPT);
      conv = id;
      expect(readFileSync(join(work, ACTIVITY_FILE), "utf8")).toBe(ACTIVITY_AFTER);

      const write = spec.write ?? { events: true };
      const where = JSON.stringify({ events, approvals });
      const inEvents = eventDiffs(events);
      const inPreview = previewDiffs(approvals);
      expect(inEvents.length > 0, where).toBe(write.events);
      if (write.preview !== undefined) expect(inPreview.length > 0, where).toBe(write.preview);
      for (const d of [...inEvents, ...inPreview]) {
        expect(d).toMatchObject({ path: ACTIVITY_FILE, display: ACTIVITY_FILE, outside: false });
        // A new file: its text is added (whether the agent's empty old text reads as a fragment is the agent's).
        expect(d.patch).toContain("+TWO");
        expect(d.additions).toBe(8);
        expect(d.deletions).toBe(0);
      }
      expect(events.some((e) => e.kind === "edit")).toBe(true);
      for (const l of events.flatMap((e) => e.locations ?? [])) {
        expect(l.outside).toBe(false);
        expect(l.path?.startsWith("/")).toBe(false);
      }
      expectNoServerPaths(p.frames, serverDirs());
    });

    const change = spec.change;
    if (change) {
      it(`its edit tool's diff of a changed file arrives (${JSON.stringify(change)})`, async () => {
        const work = spec.fixture.work;
        expect(readFileSync(join(work, ACTIVITY_FILE), "utf8")).toBe(ACTIVITY_AFTER);
        if (change.mode)
          await p.client.request({ type: "mode.set", conversation_id: conv, mode_id: change.mode });
        const { events, approvals } = await run(CHANGE_PROMPT, conv);
        expect(readFileSync(join(work, ACTIVITY_FILE), "utf8")).toBe(ACTIVITY_CHANGED);
        const where = JSON.stringify({ events, approvals });
        for (const [shape, diffs] of [
          [change.events, eventDiffs(events)],
          [change.preview, previewDiffs(approvals)],
        ] as const) {
          if (!shape) {
            expect(diffs, where).toEqual([]);
            continue;
          }
          expect(diffs.length, where).toBeGreaterThan(0);
          for (const d of diffs) {
            expect(d).toMatchObject({ path: ACTIVITY_FILE, outside: false, fragment: shape === "fragment" });
            expect(d.patch).toContain("-TWO\n+2");
            expect([d.additions, d.deletions]).toEqual([1, 1]);
            // A whole-file diff shows 3 lines of the file around the change, numbered in the file.
            if (shape === "whole")
              expect(d.patch).toContain("@@ -1,5 +1,5 @@\n one\n-TWO\n+2\n three\n four\n five\n");
          }
        }
        expectNoServerPaths(p.frames, serverDirs());
      });
    }

    if (spec.shell !== undefined) {
      const relays = spec.shell;
      it(`its shell command's output ${relays ? "arrives as text of an execute call: redacted, without the server's paths" : "does not arrive"}`, async () => {
        const { events } = await run(SHELL_PROMPT);
        const execute = events.filter((e) => e.kind === "execute");
        expect(execute.length, JSON.stringify(events)).toBeGreaterThan(0);
        const texts = execute.flatMap((e) =>
          (e.content ?? []).flatMap((b) => (b.type === "text" ? [b.text] : [])),
        );
        const output = texts.find((t) => t.includes("out line"));
        if (!relays) {
          expect(output, JSON.stringify(execute)).toBeUndefined();
          return;
        }
        expect(output, JSON.stringify(execute)).toBeDefined();
        console.info("activity: the shell command's output as it arrived:", JSON.stringify(output));
        expect(output).toContain("API_TOKEN=[REDACTED]");
        for (const frame of p.frames) expect(JSON.stringify(frame)).not.toContain(SHELL_SECRET);
        expectNoServerPaths(p.frames, serverDirs());
      });
    }

    if (spec.thoughts !== undefined) {
      const relays = spec.thoughts;
      it(`the model's reasoning ${relays ? "arrives as a thought, scrubbed of the work dir" : "arrives as no thought"}`, async () => {
        const { runId } = await run(THINK_PROMPT);
        const frames = runFrames(p.frames, runId, { accepted: false });
        const completes = framesOf(frames, "thought.complete");
        const answer = framesOf(frames, "message.complete").find((m) => m.text.includes(THOUGHT_ANSWER));
        expect(answer, JSON.stringify(frames)).toBeDefined();
        if (!relays) {
          expect(framesOf(frames, "thought.delta")).toEqual([]);
          expect(completes).toEqual([]);
          return;
        }
        const text = completes.map((c) => c.text).join("");
        expect(text).toContain(`Thinking about <workdir>/${ACTIVITY_FILE} first.`);
        for (const c of completes) {
          let stitched = "";
          for (const d of framesOf(frames, "thought.delta").filter((d) => d.thought_id === c.thought_id))
            stitched = applyDelta(stitched, d);
          expect(c.text.startsWith(stitched)).toBe(true);
        }
        // The thought ended before the answer streamed.
        const answered = frames.findIndex(
          (f) =>
            (f.type === "message.delta" || f.type === "message.complete") &&
            f.message_id === answer!.message_id,
        );
        expect(frames.findIndex((f) => f.type === "thought.complete")).toBeLessThan(answered);
        expectNoServerPaths(p.frames, serverDirs());
      });
    }

    if (spec.plan !== undefined) {
      const sends = spec.plan;
      it(`its plan tool's steps ${sends ? "arrive as plan.updated and in history" : "arrive as no plan.updated"}`, async () => {
        const { id, runId, events } = await run(PLAN_PROMPT);
        const plans = framesOf(p.frames, "plan.updated").filter((m) => m.run_id === runId);
        const history = (await p.client.request({
          type: "conversation.open",
          conversation_id: id,
        })) as ServerMessageOf<"conversation.history">;
        if (!sends) {
          expect(plans).toEqual([]);
          expect(history.plan).toBeNull();
          expect(events.length).toBeGreaterThan(0); // the tool ran, as a call of its own
          return;
        }
        expect(plans.length, JSON.stringify(events)).toBeGreaterThan(0);
        const steps = plans.at(-1)!.entries.map(({ content, status }) => ({ content, status }));
        expect(steps).toEqual(PLAN_STEPS);
        expect(history.plan?.map(({ content, status }) => ({ content, status }))).toEqual(PLAN_STEPS);
      });
    }

    if (spec.usage !== undefined) {
      const usage = spec.usage;
      it(`its context usage ${usage ? "arrives as usage.updated and in history" : "arrives as no usage.updated"}`, async () => {
        const { id } = await run("say hello");
        const updates = framesOf(p.frames, "usage.updated").filter((u) => u.conversation_id === id);
        const history = (await p.client.request({
          type: "conversation.open",
          conversation_id: id,
        })) as ServerMessageOf<"conversation.history">;
        if (!usage) {
          expect(updates).toEqual([]);
          expect(history.usage).toBeNull();
          return;
        }
        expect(updates.length).toBeGreaterThan(0);
        for (const u of updates) {
          expect(u.used).toBeGreaterThan(0);
          expect(u.size).toBeGreaterThan(u.used);
          if (usage.cost)
            expect(u.cost).toEqual({ amount: expect.any(Number), currency: expect.any(String) });
          else expect(u.cost).toBeNull();
        }
        const last = updates.at(-1)!;
        expect(history.usage).toEqual({ used: last.used, size: last.size, cost: last.cost });
      });
    }
  });
}

/** No frame contains any of `dirs` (the server's own directories), v1 fields included. */
export function expectNoServerPaths(frames: ServerMessage[], dirs: Array<string | undefined>): void {
  for (const frame of frames) {
    const text = JSON.stringify(frame);
    for (const dir of dirs)
      if (dir) expect(text.includes(dir), `${dir} in ${text.slice(0, 2000)}`).toBe(false);
  }
}
