/**
 * The `changes` extension with a real agent, through a real Pheby server and `@pheby/client`: Qwen
 * Code, in a workspace that is a real git repository, reads and edits two committed files with its own
 * tools and runs a shell command that creates a third; `changes.list` then lists the three with their
 * statuses and line counts against the conversation's base commit, the run is followed by
 * `changes.changed` with the totals, and `changes.diff` of an edited file is its patch. Every frame is
 * validated against `@pheby/protocol` (test/setup.ts).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_CHANGES, FEATURE_WORKSPACES } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../acp/fake-llm.js";
import { type PhebyAgents, startPhebyAgents } from "../acp/pheby.js";
import { expectNoServerPaths } from "./activity.js";
import { skipReason } from "./agents.js";
import {
  approveEverything,
  git,
  gitWorkspace,
  multiAgentScript,
  qwenOptions,
  shellCall,
} from "./multi-agent.js";

const reason = skipReason("qwen");
if (reason) console.info(reason);

/** The prompt the fake model answers with the edits and the command below. */
const EDIT_PROMPT = "edit the two files and generate the third";
const APP = "src/app.ts";
const NOTES = "notes.md";
const GENERATED = "generated.txt";

describe.skipIf(reason !== null)("Qwen Code's changes (the changes extension)", { timeout: 240_000 }, () => {
  let llm: FakeLlm;
  let p: PhebyAgents;
  let repo: string;

  beforeAll(async () => {
    repo = gitWorkspace("changes", {
      [APP]: "export const a = 1;\nexport const b = 2;\nexport const c = 3;\n",
      [NOTES]: "# Notes\n\nold line\n",
    });
    // Read each file first (Qwen Code edits only what it has read), edit both, then run a command.
    const steps = [
      { name: "read_file", arguments: { file_path: join(repo, APP) } },
      { name: "read_file", arguments: { file_path: join(repo, NOTES) } },
      {
        name: "edit",
        arguments: {
          file_path: join(repo, APP),
          old_string: "export const b = 2;\n",
          new_string: "export const b = 20;\nexport const b2 = 21;\n",
        },
      },
      {
        name: "edit",
        arguments: { file_path: join(repo, NOTES), old_string: "old line", new_string: "new line" },
      },
    ];
    llm = await startFakeLlm(
      multiAgentScript({
        [EDIT_PROMPT]: (tools, step) => {
          const call = step < steps.length ? steps[step] : undefined;
          if (call) return { toolCalls: [call] };
          if (step === steps.length)
            return { toolCalls: [shellCall(tools, `printf 'one\\ntwo\\n' > ${GENERATED}`)] };
          return undefined;
        },
      }),
    );
    p = await startPhebyAgents(
      [{ id: "qwen", name: "Qwen Code", options: qwenOptions(llm, repo) }],
      [{ id: "repo", name: "Repository", path: repo }],
      { features: [FEATURE_WORKSPACES, FEATURE_CHANGES] },
    );
    approveEverything(p);
  }, 120_000);

  afterAll(async () => {
    await p?.close();
    await llm?.close();
    if (repo) rmSync(repo, { recursive: true, force: true });
  });

  it("lists the two edited files and the generated one with their counts, and diffs one", async () => {
    const head = git(repo, "rev-parse", "HEAD").trim();
    const { conversation_id } = await p.client.request({ type: "conversation.create", workspace_id: "repo" });
    const before = await p.client.request({ type: "changes.list", conversation_id });
    expect(before).toMatchObject({ base: { commit: head }, files: [], truncated: false });

    const run = await p.chat(conversation_id, EDIT_PROMPT, 180_000);
    expect(run.finished.status, JSON.stringify(run.finished)).toBe("completed");
    // Qwen Code's own tools did it: every step's tool call reached the agent and came back.
    expect(git(repo, "status", "--porcelain").split("\n").filter(Boolean).sort()).toEqual(
      [` M ${NOTES}`, ` M ${APP}`, `?? ${GENERATED}`].sort(),
    );

    const snapshot = await p.client.request({ type: "changes.list", conversation_id });
    expect(snapshot.base.commit).toBe(head);
    expect(snapshot.truncated).toBe(false);
    const byPath = Object.fromEntries(snapshot.files.map((f) => [f.path, f]));
    expect(Object.keys(byPath).sort()).toEqual([GENERATED, NOTES, APP].sort());
    const common = { type: "file", binary: false };
    expect(byPath[APP]).toMatchObject({ ...common, status: "modified", additions: 2, deletions: 1 });
    expect(byPath[NOTES]).toMatchObject({ ...common, status: "modified", additions: 1, deletions: 1 });
    expect(byPath[GENERATED]).toMatchObject({ ...common, status: "added", additions: 2, deletions: 0 });
    for (const f of snapshot.files) expect(f.old_path).toBeUndefined();

    // The run's end told every `changes` connection the totals.
    const changed = await p.waitFor("changes.changed", (m) => m.run_id === run.runId, 30_000);
    expect(changed).toMatchObject({ conversation_id, file_count: 3, additions: 5, deletions: 2 });

    const diff = await p.client.request({
      type: "changes.diff",
      conversation_id,
      file_id: byPath[APP]!.file_id,
    });
    expect(diff).toMatchObject({ conversation_id, path: APP, truncated: false });
    expect(diff.patch).toContain("-export const b = 2;");
    expect(diff.patch).toContain("+export const b = 20;");
    expect(diff.patch).toContain("+export const b2 = 21;");
    expect(diff.patch).toContain(" export const a = 1;"); // context
    const added = await p.client.request({
      type: "changes.diff",
      conversation_id,
      file_id: byPath[GENERATED]!.file_id,
    });
    expect(added.patch).toContain("+one");
    expect(added.patch).toContain("+two");
    // Paths are relative to the repository, never the server's.
    const frames = p.frames.filter((m) => m.type.startsWith("changes."));
    expectNoServerPaths(frames, [repo, p.ts.dataDir]);
  });
});
