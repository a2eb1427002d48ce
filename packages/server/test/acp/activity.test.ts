/**
 * The `activity` extension end to end with the ACP backend: the scripted fake agent (a real child
 * process) reports tool calls as agents do (diffs of whole files and of fragments, new files, output,
 * raw output, locations inside and outside the workspace), and a raw `activity` connection checks what
 * arrives: paths relative to the path base (the git working tree holding the agent's working
 * directory), none of the server's own directories, secrets redacted, every part bounded. The files are
 * real, in a temp dir.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import type * as acp from "@agentclientprotocol/sdk";
import {
  FEATURE_ACTIVITY,
  LIMITS,
  type ServerMessageOf,
  type ToolContentBlock,
  type ToolDiffBlock,
  type ToolTextBlock,
} from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawClient } from "../helpers.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";
import { type PhebyAcp, startPhebyAcp } from "./pheby.js";

type ToolEvent = ServerMessageOf<"tool.event">;
type Step =
  | { update: acp.SessionUpdate }
  | { permission: acp.ToolCallUpdate }
  | { write: { path: string; text: string } }
  | { say: string };

const OLD = [
  'import { serve } from "./server";',
  "",
  "const port = 3000;",
  "const host = '127.0.0.1';",
  "",
  "serve(host, port);",
  "",
].join("\n");
const NEW = OLD.replace("const port = 3000;", "const port = Number(process.env.PORT ?? 3000);");

describe("ACP tool detail on an activity connection", () => {
  let fake: ReturnType<typeof fakeAgentDir>;
  let repo: string;
  let p: PhebyAcp;
  let phone: RawClient;
  let conversation: string;
  let steps = 0;

  beforeAll(async () => {
    fake = fakeAgentDir();
    // The agent works in a subdirectory of a git working tree: paths are relative to the tree's root.
    repo = realpathSync(mkdtempSync(join(tmpdir(), "pheby-repo-")));
    mkdirSync(join(repo, ".git"));
    mkdirSync(join(repo, "pkg"));
    mkdirSync(join(repo, "src"));
    p = await startPhebyAcp(
      {
        command: FAKE_AGENT_COMMAND,
        cwd: join(repo, "pkg"),
        allowedFileRoots: [repo],
        respawnBackoffMs: 10,
        requestTimeoutMs: 15_000,
        env: fake.env,
      },
      { transport: "memory" },
    );
    phone = await RawClient.connect(p.ts.wsUrl, { features: [FEATURE_ACTIVITY] });
    conversation = await p.create("Activity");
  });
  afterAll(async () => {
    phone.close();
    await p.close();
  });

  /** Have the agent play `script`, approving any question once; the run's tool events as the phone got them. */
  async function play(
    script: Step[],
  ): Promise<{ tools: ToolEvent[]; approvals: ServerMessageOf<"approval.request">[] }> {
    const file = join(fake.dir, `steps-${++steps}.json`);
    writeFileSync(file, JSON.stringify(script));
    const from = phone.frames.length;
    const { run_id: runId } = await phone.ok(
      { type: "chat.send", conversation_id: conversation, text: `replay ${file}` },
      "run.accepted",
    );
    const asks = script.filter((s) => "permission" in s).length;
    const approvals: ServerMessageOf<"approval.request">[] = [];
    for (let i = 0; i < asks; i++) {
      const ask = await phone.next(
        "approval.request",
        (a) => !approvals.some((b) => b.approval_id === a.approval_id),
      );
      approvals.push(ask);
      phone.send({ type: "approval.respond", approval_id: ask.approval_id, choice: "once" });
    }
    await phone.next("run.finished", (f) => f.run_id === runId);
    const tools = phone.frames
      .slice(from)
      .filter((f): f is ToolEvent => f.type === "tool.event" && f.run_id === runId);
    return { tools, approvals };
  }

  const call = (toolCallId: string, fields: Partial<acp.ToolCall>): Step => ({
    update: { sessionUpdate: "tool_call", toolCallId, title: toolCallId, status: "in_progress", ...fields },
  });
  const done = (toolCallId: string, fields: Partial<acp.ToolCallUpdate> = {}): Step => ({
    update: { sessionUpdate: "tool_call_update", toolCallId, status: "completed", ...fields },
  });
  const text = (t: string): acp.ToolCallContent => ({ type: "content", content: { type: "text", text: t } });
  const latest = (tools: ToolEvent[], id: string) => {
    const mine = tools.filter((t) => t.tool_call_id === id);
    // Content is repeated only when it changed: the call's content is the last one sent.
    const content = [...mine].reverse().find((t) => t.content !== undefined)?.content;
    return { ...mine.at(-1)!, ...(content ? { content } : {}) };
  };
  const block = <T extends ToolContentBlock["type"]>(e: ToolEvent, type: T, i = 0) =>
    e.content!.filter((b) => b.type === type)[i] as Extract<ToolContentBlock, { type: T }>;

  it("an edit whose old text is the whole file: a true file diff, as the approval's preview too, relative to the tree's root", async () => {
    const file = join(repo, "src", "app.ts");
    writeFileSync(file, OLD);
    const diff: acp.ToolCallContent = { type: "diff", path: file, oldText: OLD, newText: NEW };
    const { tools, approvals } = await play([
      call("e1", {
        kind: "edit",
        title: `Edit ${file}`,
        status: "pending",
        locations: [{ path: file, line: 3 }],
        content: [diff],
        rawInput: { file_path: file },
      }),
      { permission: { toolCallId: "e1", title: `Edit ${file}`, kind: "edit", content: [diff] } },
      { write: { path: file, text: NEW } },
      done("e1"),
    ]);
    const event = latest(tools, "e1");
    expect(event).toMatchObject({
      kind: "edit",
      title: "Edit src/app.ts",
      locations: [{ path: "src/app.ts", line: 3, outside: false }],
      status: "completed",
    });
    const d = block(event, "diff");
    expect(d).toMatchObject({
      path: "src/app.ts",
      display: "src/app.ts",
      outside: false,
      fragment: false,
      additions: 1,
      deletions: 1,
      truncated: false,
    });
    expect(d.patch).toContain("--- src/app.ts\n+++ src/app.ts\n@@ -1,6 +1,6 @@\n");
    expect(d.patch).toContain("-const port = 3000;\n+const port = Number(process.env.PORT ?? 3000);\n");
    expect(approvals[0]).toMatchObject({ tool_call_id: "e1", preview: [d] });
    // tool.get, after the file changed on disk: still the whole-file diff of before the call.
    const got = await phone.ok(
      { type: "tool.get", conversation_id: conversation, tool_call_id: "e1" },
      "tool.event",
    );
    expect(block(got, "diff")).toEqual(d);
  });

  it("an edit of a fragment (the replaced snippet only): fragment true, hunks relative to it", async () => {
    const file = join(repo, "src", "app.ts");
    writeFileSync(file, OLD);
    const { tools } = await play([
      call("f1", {
        kind: "edit",
        content: [{ type: "diff", path: file, oldText: "const port = 3000;", newText: "const port = 4000;" }],
      }),
      done("f1"),
    ]);
    const d = block(latest(tools, "f1"), "diff");
    expect(d).toMatchObject({ path: "src/app.ts", fragment: true, additions: 1, deletions: 1 });
    expect(d.patch).toBe(
      "--- src/app.ts\n+++ src/app.ts\n@@ -1,1 +1,1 @@\n-const port = 3000;\n+const port = 4000;\n",
    );
  });

  it("a new file (no old text): a diff from /dev/null", async () => {
    const file = join(repo, "docs", "new.md");
    const { tools } = await play([
      call("n1", { kind: "edit", content: [{ type: "diff", path: file, newText: "# New\n\nHello.\n" }] }),
      done("n1"),
    ]);
    const d = block(latest(tools, "n1"), "diff");
    expect(d).toMatchObject({ path: "docs/new.md", fragment: false, additions: 3, deletions: 0 });
    expect(d.patch).toBe("--- /dev/null\n+++ docs/new.md\n@@ -0,0 +1,3 @@\n+# New\n+\n+Hello.\n");
  });

  it("a read of an .env file shows none of its values; credentials in other output are redacted by pattern", async () => {
    const env = join(repo, ".env");
    const { tools } = await play([
      call("r1", {
        kind: "read",
        title: `Read ${env}`,
        locations: [{ path: env }],
        content: [text("PORT=3000\nAPI_KEY=abc123456789\nDB_PASSWORD=hunter22\nexport REGION=eu-west-1\n")],
      }),
      done("r1"),
      call("x1", {
        kind: "execute",
        title: "npm test",
        content: [
          text(
            "token: ghp_abcdefghijklmnopqrstuvwxyz012345\nAWS AKIAABCDEFGHIJKLMNOP\npostgres://app:s3cretpw@db/x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nok",
          ),
        ],
      }),
      done("x1"),
    ]);
    const read = block(latest(tools, "r1"), "text");
    expect(read.text).toBe(
      "PORT=[REDACTED]\nAPI_KEY=[REDACTED]\nDB_PASSWORD=[REDACTED]\nexport REGION=[REDACTED]\n",
    );
    const out = block(latest(tools, "x1"), "text").text;
    for (const secret of ["ghp_abcdefghijklmnop", "AKIAABCDEFGHIJKLMNOP", "s3cretpw", "MIIEow"])
      expect(out).not.toContain(secret);
    expect(out).toContain("postgres://app:[REDACTED]@db/x");
    expect(out.endsWith("ok")).toBe(true);
  });

  it("locations and diffs outside the tree: path null, scrubbed display, never dropped; no server directory in the detail", async () => {
    const notes = join(homedir(), "pheby-activity-notes", "todo.md");
    const data = join(p.ts.dataDir, "pheby.sqlite");
    const { tools } = await play([
      call("o1", {
        kind: "edit",
        title: `Edit ${notes}`,
        locations: [{ path: notes, line: 1 }, { path: data }, { path: join(repo, "README.md") }],
        content: [{ type: "diff", path: notes, oldText: null, newText: "- [ ] tea\n" }],
      }),
      done("o1"),
    ]);
    const event = latest(tools, "o1");
    expect(event.locations).toEqual([
      { path: null, line: 1, outside: true, display: "~/pheby-activity-notes/todo.md" },
      { path: null, line: null, outside: true, display: "<data>/pheby.sqlite" },
      { path: "README.md", line: null, outside: false },
    ]);
    expect(event.title).toBe("Edit ~/pheby-activity-notes/todo.md");
    expect(block(event, "diff")).toMatchObject({
      path: null,
      display: "~/pheby-activity-notes/todo.md",
      outside: true,
      additions: 1,
    });
    // What the extension adds, in every frame so far (v1's own fields are as they always were).
    const detail = JSON.stringify(
      phone.frames.map((f) => {
        const { kind, title, locations, content, preview } = f as Record<string, unknown>;
        return { kind, title, locations, content, preview };
      }),
    );
    for (const dir of [repo, p.ts.dataDir, homedir()]) expect(detail).not.toContain(dir);
  });

  it("text of 16,000 characters is kept whole; of 16,001 the last 16,000, truncated", async () => {
    const exact = `${"a".repeat(LIMITS.toolTextChars - 3)}end`;
    const over = `X${exact}`;
    const { tools } = await play([
      call("t1", { kind: "execute", content: [text(exact)] }),
      done("t1"),
      call("t2", { kind: "execute", content: [text(over)] }),
      done("t2"),
    ]);
    expect(block(latest(tools, "t1"), "text")).toEqual({ type: "text", text: exact, truncated: false });
    expect(block(latest(tools, "t2"), "text")).toEqual({ type: "text", text: exact, truncated: true });
  });

  it("50 locations and 20 blocks are kept; the 51st and the 21st are not", async () => {
    const locations = (n: number) => Array.from({ length: n }, (_, i) => ({ path: join(repo, `f${i}.ts`) }));
    const blocks = (n: number) => Array.from({ length: n }, (_, i) => text(`block ${i}`));
    const { tools } = await play([
      call("l50", { kind: "search", locations: locations(50), content: blocks(20) }),
      done("l50"),
      call("l51", { kind: "search", locations: locations(51), content: blocks(21) }),
      done("l51"),
    ]);
    for (const id of ["l50", "l51"]) {
      const event = latest(tools, id);
      expect(event.locations).toHaveLength(LIMITS.toolLocations);
      expect(event.content).toHaveLength(LIMITS.toolContentBlocks);
      expect(event.locations!.at(-1)).toEqual({ path: "f49.ts", line: null, outside: false });
      expect((event.content!.at(-1) as ToolTextBlock).text).toBe("block 19");
    }
  });

  it("a call of 20 diffs of ~60 KiB arrives within 256 KiB: the last blocks cut first, each marked truncated", async () => {
    const big = (i: number) =>
      Array.from({ length: 1_500 }, (_, n) => `line ${n} of file ${i} ${"x".repeat(16)}`).join("\n");
    const content: acp.ToolCallContent[] = Array.from({ length: 20 }, (_, i) => ({
      type: "diff",
      path: join(repo, "gen", `f${i}.txt`),
      newText: big(i),
    }));
    const { tools } = await play([call("b1", { kind: "edit", content }), done("b1")]);
    const raw = phone.frames.length; // every frame was validated on arrival (test/setup.ts)
    expect(raw).toBeGreaterThan(0);
    for (const event of tools.filter((t) => t.tool_call_id === "b1"))
      expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThanOrEqual(LIMITS.toolEventBytes);
    const blocks = latest(tools, "b1").content as ToolDiffBlock[];
    expect(blocks).toHaveLength(20);
    expect(blocks[0]!.truncated).toBe(false);
    expect(blocks.at(-1)!.truncated).toBe(true);
    const firstCut = blocks.findIndex((b) => b.truncated);
    expect(blocks.slice(firstCut).every((b) => b.truncated)).toBe(true);
    expect(blocks[0]!.additions).toBe(1_500);
  });

  it("a finished call without content shows its raw output, redacted by key", async () => {
    const { tools } = await play([
      call("w1", { kind: "fetch", title: "GET /status" }),
      done("w1", { rawOutput: { status: 200, body: "ok", api_token: "tok-123456789" } }),
    ]);
    const out = block(latest(tools, "w1"), "text").text;
    expect(JSON.parse(out)).toEqual({ status: 200, body: "ok", api_token: "[REDACTED]" });
  });

  it("a plan-mode exit asked as a permission (Claude Code's ExitPlanMode): the plan is the preview", async () => {
    const plan = "1. Read the failing test\n2. Fix the port parsing\n3. Run the tests";
    const { approvals } = await play([
      call("plan1", { kind: "switch_mode", title: "Ready to code?", rawInput: { plan } }),
      {
        permission: {
          toolCallId: "plan1",
          title: "Ready to code?",
          kind: "switch_mode",
          rawInput: { plan },
          _meta: { claudeCode: { toolName: "ExitPlanMode" } },
        },
      },
      done("plan1"),
    ]);
    expect(approvals[0]).toMatchObject({
      tool_call_id: "plan1",
      preview: [{ type: "text", text: plan, truncated: false }],
    });
  });

  it("args_redacted and an approval's command and description name no server path (every connection's v1 fields)", async () => {
    const file = join(repo, "pkg", "a.txt");
    const { tools, approvals } = await play([
      call("w1", {
        kind: "edit",
        title: `Write ${file}`,
        // Codex keys its apply_patch changes by absolute path.
        rawInput: { file_path: file, paths: [file], changes: { [file]: { type: "add" } } },
      }),
      { permission: { toolCallId: "w1", title: `Write ${file}`, rawInput: { file_path: file } } },
      done("w1"),
    ]);
    expect(tools[0]!.args_redacted).toEqual({
      file_path: "<workdir>/a.txt",
      paths: ["<workdir>/a.txt"],
      changes: { "<workdir>/a.txt": { type: "add" } },
    });
    expect(approvals[0]).toMatchObject({
      command: "Write <workdir>/a.txt",
      description: "Write <workdir>/a.txt",
    });
    expect(JSON.stringify([tools, approvals])).not.toContain(repo);
  });

  it("a command approval without content previews the command", async () => {
    const { approvals } = await play([
      call("c1", { kind: "execute", title: "rm -rf build", rawInput: { command: "rm -rf build" } }),
      { permission: { toolCallId: "c1", title: "rm -rf build", rawInput: { command: "rm -rf build" } } },
      done("c1"),
    ]);
    expect(approvals[0]!.preview).toEqual([{ type: "text", text: "$ rm -rf build", truncated: false }]);
  });
});
