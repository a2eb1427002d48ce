/**
 * The `activity` extension with a real agent, through a real Pheby server and `@pheby/client`: the
 * fake model drives the agent's own file-writing tool on a new file of the work dir; the tool's events carry its
 * diff with the path relative to the path base (the work dir, not a git repository), and no frame the
 * client receives names a directory of the server (its data dir, the work dir's absolute path, the
 * agent's home). Every frame is validated against `@pheby/protocol`.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_ACTIVITY, type ServerMessage } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "../acp/pheby.js";
import type { AgentFixture, LlmFixture } from "./agents.js";

/** The prompt the calling suite's fake model answers with its agent's edit tool (see {@link ActivitySpec}). */
export const EDIT_PROMPT = "please edit the activity file";
/**
 * The file the edit writes, new in the work dir (agents that refuse to overwrite a file they have not
 * read, as Qwen Code, write a new one at once), and its text.
 */
export const ACTIVITY_FILE = "activity.txt";
export const ACTIVITY_AFTER = "one\nTWO\nthree\n";

/** What the calling suite's agent does with {@link EDIT_PROMPT}. */
export interface ActivitySpec {
  fixture: LlmFixture & Partial<Pick<AgentFixture, "options">>;
  options?: () => AcpBackendOptions;
}

/** Register the activity tests inside the calling suite's describe. */
export function describeActivity(spec: ActivitySpec): void {
  describe("tool detail (the activity extension), through a Pheby server", () => {
    let p: PhebyAcp;
    let options: AcpBackendOptions;

    beforeAll(async () => {
      const chosen = spec.options?.() ?? spec.fixture.options;
      if (!chosen) throw new Error("describeActivity: no backend options");
      options = chosen;
      p = await startPhebyAcp(options, { features: [FEATURE_ACTIVITY] });
      await p.backend.ensureReady();
    }, 150_000);

    afterAll(() => p?.close());

    it("its write tool's diff arrives relative to the path base, and no frame names a server directory", async () => {
      const work = spec.fixture.work;
      rmSync(join(work, ACTIVITY_FILE), { force: true });
      const id = await p.create("Activity");
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: id,
        text: EDIT_PROMPT,
      });
      // Answer each approval of the run once, until it finishes.
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
      expect(readFileSync(join(work, ACTIVITY_FILE), "utf8")).toBe(ACTIVITY_AFTER);

      const events = framesOf(p.frames, "tool.event").filter((e) => e.run_id === run_id);
      const diffs = events.flatMap((e) => (e.content ?? []).filter((b) => b.type === "diff"));
      expect(diffs.length, JSON.stringify(events)).toBeGreaterThan(0);
      for (const d of diffs) expect(d).toMatchObject({ path: ACTIVITY_FILE, outside: false });
      // A new file: its text is added (whether the agent's empty old text reads as a fragment is the agent's).
      const last = diffs.at(-1)!;
      expect(last.patch).toContain("+TWO");
      expect(last.additions).toBeGreaterThanOrEqual(3);
      expect(events.some((e) => e.kind === "edit")).toBe(true);
      for (const l of events.flatMap((e) => e.locations ?? [])) {
        if (!l.outside) expect(l.path?.startsWith("/")).toBe(false);
      }
      expectNoServerPaths(p.frames, [work, p.ts.dataDir, options.env?.HOME]);
    });
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
