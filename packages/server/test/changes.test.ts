// The changes extension end to end over real sockets, a real server on 127.0.0.1:0, real SQLite
// files and real git repositories in temp dirs: changes.list / changes.diff against the base recorded
// at creation, stale and unknown file IDs, a directory outside git, the 1,000-file bound,
// changes.changed at the end of a run that moved the changes (seq on resume, in the replay log, none
// for a run that moved nothing), /sim changes in the simulator's own repository, and v1 connections
// untouched. Every frame is validated against @pheby/protocol by the test client (helpers' violations).
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  checkFeatures,
  FEATURE_CHANGES,
  FEATURE_PUSH,
  FEATURE_RESUME,
  LIMITS,
  type ServerMessage,
  type ServerMessageOf,
} from "@pheby/protocol";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver } from "../../conformance/src/push-receiver.js";
import { SIM_WORKSPACE_DIR } from "../src/agent/simulator/workspace.js";
import { AgentRegistry } from "../src/agents/registry.js";
import { Changes } from "../src/changes/service.js";
import { ProtocolError } from "../src/errors.js";
import { GitRunner } from "../src/git/runner.js";
import { type AgentBackend, createSimulatorBackend, type TurnResult } from "../src/index.js";
import type { Outbox } from "../src/outbox/outbox.js";
import { runFinishedPush } from "../src/push/payload.js";
import { Store } from "../src/store/store.js";
import { git, maliciousRepo, repoWith, tempDir } from "./git-fixtures.js";
import {
  createConversation,
  helloWith,
  type RawClient,
  scriptedBackend,
  send,
  startServer,
  type TestServer,
} from "./helpers.js";

const CHANGES = [FEATURE_CHANGES];
const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

async function serve(agent?: AgentBackend): Promise<TestServer> {
  const ts = await startServer(agent ? { agent } : {});
  servers.push(ts);
  return ts;
}

async function connect(ts: TestServer, features: string[]): Promise<RawClient> {
  const c = await helloWith(ts, features);
  clients.push(c);
  return c;
}

/** The simulator, working in `dir` (as an ACP agent's `cwd` would be). */
function simulatorIn(dir: string): AgentBackend {
  return { ...createSimulatorBackend({ delayMs: 1 }), workdir: () => dir };
}

/** An agent working in `dir` whose turn "write NAME N" writes N lines to NAME; anything else changes nothing. */
function writerIn(dir: string): AgentBackend {
  return {
    ...scriptedBackend("writer", async (input, sink): Promise<TurnResult> => {
      const [verb, name, n] = input.text.split(" ");
      if (verb === "write" && name && n) writeFileSync(join(dir, name), "line\n".repeat(Number(n)));
      sink.text("done");
      return { status: "completed" };
    }),
    workdir: () => dir,
  };
}

type Snapshot = ServerMessageOf<"changes.snapshot">;
type Changed = ServerMessageOf<"changes.changed">;

const list = (c: RawClient, conversation_id: string): Promise<Snapshot> =>
  c.ok({ type: "changes.list", conversation_id }, "changes.snapshot");

/** Every frame a connection received fits a connection with `features` (v1 byte for byte when empty). */
function expectOnly(frames: readonly ServerMessage[], features: string[]): void {
  for (const frame of frames) expect(checkFeatures(frame, features), JSON.stringify(frame)).toBeUndefined();
}

function changedOf(c: RawClient, runId: string): Changed | undefined {
  return c.frames.find((f): f is Changed => f.type === "changes.changed" && f.run_id === runId);
}

describe("changes.list and changes.diff", () => {
  it("lists and diffs what differs from HEAD at creation, names files by ID only, and leaves v1 alone", async () => {
    const dir = repoWith({ "a.txt": "one\ntwo\n", "old.txt": "old\n" });
    const head = git(dir, "rev-parse", "HEAD").trim();
    const ts = await serve(simulatorIn(dir));
    const c = await connect(ts, CHANGES);
    const v1 = await connect(ts, []);
    const conv = await createConversation(c);
    // A commit after creation does not move the base: its file is a change of this conversation.
    writeFileSync(join(dir, "committed.txt"), "c\n");
    git(dir, "add", "committed.txt");
    git(dir, "commit", "-q", "-m", "later");
    writeFileSync(join(dir, "a.txt"), "one\nTWO\nthree\n");
    rmSync(join(dir, "old.txt"));
    writeFileSync(join(dir, "new.txt"), "n\n");

    const snapshot = await list(c, conv);
    expect(snapshot.base).toEqual({ commit: head, label: head.slice(0, 7) });
    expect(snapshot.truncated).toBe(false);
    expect(snapshot.files.map(({ file_id: _, ...f }) => f)).toEqual([
      { path: "a.txt", status: "modified", type: "file", additions: 2, deletions: 1, binary: false },
      { path: "committed.txt", status: "added", type: "file", additions: 1, deletions: 0, binary: false },
      { path: "new.txt", status: "added", type: "file", additions: 1, deletions: 0, binary: false },
      { path: "old.txt", status: "deleted", type: "file", additions: 0, deletions: 1, binary: false },
    ]);
    // No server path anywhere in the reply.
    expect(JSON.stringify(snapshot)).not.toContain(dir);

    const a = snapshot.files[0]!;
    const file = await c.ok(
      { type: "changes.diff", conversation_id: conv, file_id: a.file_id },
      "changes.file",
    );
    expect(file).toMatchObject({
      conversation_id: conv,
      file_id: a.file_id,
      path: "a.txt",
      truncated: false,
    });
    expect(file.patch).toContain("-two\n+TWO\n+three\n");
    expect(file.patch).not.toContain(dir);

    // Once the file is as in the base again, its ID is no longer valid.
    writeFileSync(join(dir, "a.txt"), "one\ntwo\n");
    await c.expectError(
      { type: "changes.diff", conversation_id: conv, file_id: a.file_id },
      "not_found",
      "stale",
    );
    await c.expectError(
      { type: "changes.diff", conversation_id: conv, file_id: "nope" },
      "not_found",
      "unknown",
    );
    await c.expectError(
      { type: "changes.list", conversation_id: "c-missing" },
      "conversation_not_found",
      "missing",
    );

    // v1: the requests do not exist, and nothing of the extension reached it.
    await v1.expectError({ type: "changes.list", conversation_id: conv }, "unknown_type", "v1 list");
    await v1.expectError(
      { type: "changes.diff", conversation_id: conv, file_id: a.file_id },
      "unknown_type",
      "v1 diff",
    );
    expectOnly(v1.frames, []);
  });

  it("is not_implemented, saying so, for a working directory outside any git repository", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "a.txt"), "a\n");
    const ts = await serve(simulatorIn(dir));
    const c = await connect(ts, CHANGES);
    const conv = await createConversation(c);
    const reply = await c.request({ type: "changes.list", conversation_id: conv }, "changes.snapshot");
    expect(reply).toMatchObject({ type: "error", error: { code: "not_implemented" } });
    expect((reply as ServerMessageOf<"error">).error.message).toMatch(/not in a git repository/);
    expect(JSON.stringify(reply)).not.toContain(dir);
    await c.expectError(
      { type: "changes.diff", conversation_id: conv, file_id: "x" },
      "not_implemented",
      "diff",
    );
  });

  it("is not_implemented for a working directory not made yet, even where a repository would hold it", async () => {
    const outer = repoWith({ "a.txt": "a\n" });
    writeFileSync(join(outer, "a.txt"), "changed\n");
    const ts = await serve(simulatorIn(join(outer, "not-yet")));
    const c = await connect(ts, CHANGES);
    const conv = await createConversation(c);
    await c.expectError({ type: "changes.list", conversation_id: conv }, "not_implemented", "not made yet");
  });

  it(`lists ${LIMITS.changesFiles} files whole, and ${LIMITS.changesFiles + 1} cut with truncated`, async () => {
    const dir = repoWith({ "keep.txt": "k\n" });
    mkdirSync(join(dir, "many"));
    for (let i = 0; i < LIMITS.changesFiles; i++)
      writeFileSync(join(dir, "many", `f${String(i).padStart(4, "0")}`), "x\n");
    const ts = await serve(simulatorIn(dir));
    const c = await connect(ts, CHANGES);
    const conv = await createConversation(c);
    const whole = await list(c, conv);
    expect(whole.files).toHaveLength(LIMITS.changesFiles);
    expect(whole.truncated).toBe(false);
    writeFileSync(join(dir, "many", "one-more"), "x\n");
    const cut = await list(c, conv);
    expect(cut.files).toHaveLength(LIMITS.changesFiles);
    expect(cut.truncated).toBe(true);
  });
});

describe("changes over the wire: hostile and odd work trees", () => {
  it("lists and diffs a malicious repository, a 10 MB file and symlinks out of it: nothing runs, no server path", async () => {
    const repo = maliciousRepo();
    const ts = await serve(simulatorIn(repo.dir));
    const c = await connect(ts, CHANGES);
    const conv = await createConversation(c);
    writeFileSync(join(repo.dir, "a.txt"), "one\nTWO\n");
    writeFileSync(join(repo.dir, "data.bin"), "bin\n");
    const line = `${"x".repeat(99)}\n`;
    writeFileSync(join(repo.dir, "big.log.txt"), line.repeat((10 * 1024 * 1024) / line.length));
    // Absolute targets: one in the data directory, one anywhere else.
    symlinkSync(join(ts.dataDir, "pheby.db"), join(repo.dir, "to-data"));
    symlinkSync("/etc/hostname", join(repo.dir, "to-etc"));
    const snapshot = await list(c, conv);
    expect(snapshot.files.map((f) => f.path)).toEqual([
      "a.txt",
      "big.log.txt",
      "data.bin",
      "to-data",
      "to-etc",
    ]);
    const patches = new Map<string, ServerMessageOf<"changes.file">>();
    for (const f of snapshot.files)
      patches.set(
        f.path,
        await c.ok({ type: "changes.diff", conversation_id: conv, file_id: f.file_id }, "changes.file"),
      );
    expect(patches.get("a.txt")?.patch).toContain("+TWO"); // the file itself: no filter, no textconv
    expect(patches.get("big.log.txt")).toMatchObject({ truncated: true });
    expect(Buffer.byteLength(patches.get("big.log.txt")?.patch as string)).toBeLessThanOrEqual(
      LIMITS.changesPatchBytes,
    );
    expect(patches.get("to-data")?.patch).toContain("+<data>/pheby.db");
    expect(patches.get("to-etc")?.patch).toContain("+/etc/hostname");
    expect(JSON.stringify([...patches.values()])).not.toContain(ts.dataDir);
    expect(repo.markers()).toEqual([]);
  });

  it("gives a conversation made before its directory was a repository HEAD at its first changes.list", async () => {
    const dir = tempDir();
    const ts = await serve(simulatorIn(dir));
    const c = await connect(ts, CHANGES);
    const conv = await createConversation(c);
    await c.expectError({ type: "changes.list", conversation_id: conv }, "not_implemented", "before git");
    git(dir, "init", "-q");
    await c.expectError(
      { type: "changes.list", conversation_id: conv },
      "not_implemented",
      "before a commit",
    );
    writeFileSync(join(dir, "a.txt"), "a\n");
    git(dir, "add", "a.txt");
    git(dir, "commit", "-q", "-m", "first");
    const head = git(dir, "rev-parse", "HEAD").trim();
    writeFileSync(join(dir, "b.txt"), "b\n");
    const snapshot = await list(c, conv);
    expect(snapshot.base.commit).toBe(head);
    expect(snapshot.files.map((f) => f.path)).toEqual(["b.txt"]);
    // The base stays where it was recorded.
    git(dir, "add", "b.txt");
    git(dir, "commit", "-q", "-m", "second");
    expect((await list(c, conv)).base.commit).toBe(head);
  });
});

describe("changes.changed", () => {
  it("goes out at the end of a run that moved the changes (seq on resume, replayed), not after one that did not", async () => {
    const dir = repoWith({ "base.txt": "b\n" });
    const ts = await serve(writerIn(dir));
    const c = await connect(ts, [FEATURE_CHANGES, FEATURE_RESUME]);
    const v1 = await connect(ts, []);
    const conv = await createConversation(c);

    const first = await send(c, conv, "write a.txt 3");
    const changed = await c.next("changes.changed");
    expect(changed).toMatchObject({
      conversation_id: conv,
      run_id: first,
      file_count: 1,
      additions: 3,
      deletions: 0,
    });
    expect((changed as { seq?: number }).seq).toBeTypeOf("number");

    const idle = await send(c, conv, "nothing");
    await c.run(idle);
    // A changes.list after a run's end is answered after that run's changes were measured.
    expect((await list(c, conv)).files.map((f) => f.path)).toEqual(["a.txt"]);
    expect(changedOf(c, idle)).toBeUndefined();
    const third = await send(c, conv, "write b.txt 2");
    const later = await c.waitFor(
      (f) => f.type === "changes.changed" && f.run_id === third,
      "changes.changed of run 3",
    );
    expect(later).toMatchObject({ file_count: 2, additions: 5, deletions: 0 });
    expect(changedOf(c, idle)).toBeUndefined();

    // A resume connection replays them from the log.
    const again = await connect(ts, [FEATURE_CHANGES, FEATURE_RESUME]);
    again.send({ type: "conversation.open", conversation_id: conv, since_seq: 0, request_id: "r" });
    await again.waitFor(
      (f) => f.type === "changes.changed" && f.run_id === third,
      "replayed changes.changed",
    );
    expect(changedOf(again, first)).toMatchObject({ file_count: 1, additions: 3 });

    // v1 saw the runs, and none of this.
    await v1.waitFor((f) => f.type === "run.finished" && f.run_id === third, "v1 run.finished");
    expectOnly(v1.frames, []);
  });

  it("/sim changes edits the simulator's own repository under the data directory, which changes then lists", async () => {
    const ts = await serve();
    const c = await connect(ts, CHANGES);
    const conv = await createConversation(c);
    // Before the scenario ran, the simulator has no repository: not a git repository.
    await c.expectError({ type: "changes.list", conversation_id: conv }, "not_implemented", "before");
    const run = await send(c, conv, "/sim changes");
    const changed = await c.waitFor(
      (f) => f.type === "changes.changed" && f.run_id === run,
      "changes.changed",
    );
    expect(changed).toMatchObject({ file_count: 3, additions: 5, deletions: 2 });
    const snapshot = await list(c, conv);
    expect(snapshot.files.map((f) => [f.path, f.status, f.additions, f.deletions])).toEqual([
      ["docs/old-notes.md", "deleted", 0, 1],
      ["src/app.ts", "modified", 2, 1],
      ["src/feature.ts", "added", 3, 0],
    ]);
    const feature = snapshot.files[2]!;
    const file = await c.ok(
      { type: "changes.diff", conversation_id: conv, file_id: feature.file_id },
      "changes.file",
    );
    expect(file.patch).toContain("+export function feature() {");
    // The repository is the simulator's own, inside the data directory.
    expect(existsSync(join(ts.dataDir, SIM_WORKSPACE_DIR, ".git"))).toBe(true);
    expect(readdirSync(join(ts.dataDir, SIM_WORKSPACE_DIR, "src")).sort()).toEqual(["app.ts", "feature.ts"]);
  });
});

describe("the finished-run push of a run that moved the changes", () => {
  it("ends its body with ' · N files +A −D' (and a run that moved nothing keeps its plain body)", async () => {
    const receiver = await startReceiver();
    const ts = await startServer({ push: { allowPrivate: true } });
    servers.push(ts);
    try {
      const c = await connect(ts, [FEATURE_PUSH, FEATURE_CHANGES]);
      const phone = receiver.endpoint("phone");
      await c.ok(
        { type: "push.subscribe", endpoint: phone.endpoint, keys: phone.keys, device_name: "Pixel 9" },
        "push.subscribed",
      );
      const conv = await createConversation(c);
      const run = await send(c, conv, "/sim changes");
      await c.run(run);
      const pushed = await phone.next();
      expect(pushed.payload).toMatchObject({ kind: "run_finished", run_id: run });
      expect(pushed.payload.body).toBe(
        "I edited src/app.ts, created src/feature.ts and deleted docs/old-notes.md. · 3 files +5 \u22122",
      );
      const plain = await send(c, conv, "hello");
      await c.run(plain);
      const second = await phone.next();
      expect(second.payload).toMatchObject({ kind: "run_finished", run_id: plain });
      expect(second.payload.body).not.toContain("files");
      expect(receiver.errors).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe("git not answering in time", () => {
  it("is internal_error 'git did not answer in time'", async () => {
    const dir = repoWith({ "a.txt": "a\n" });
    const dataDir = tempDir();
    const store = new Store(dataDir);
    try {
      store.createConversation({ id: "c1", name: "x", session_id: "s", source: "test", created_at: 0 });
      const fake = join(tempDir(), "slow-git");
      writeFileSync(fake, "#!/bin/sh\nexec sleep 600\n", { mode: 0o755 });
      const changes = new Changes({
        store,
        git: new GitRunner({ command: fake, timeoutMs: 200 }),
        agents: new AgentRegistry(
          [{ id: "default", name: "Default", backend: simulatorIn(dir) }],
          [{ id: "default", name: "Default", path: dir, agents: ["default"] }],
          { conversation: (id) => store.getConversation(id), log: pino({ level: "silent" }) },
        ),
        outbox: { publish() {} } as Outbox,
        log: pino({ level: "silent" }),
        scrub: (t) => t,
      });
      const error = await changes.snapshot("c1").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProtocolError);
      expect(error).toMatchObject({ code: "internal_error", message: "git did not answer in time" });
    } finally {
      store.close();
    }
  });
});

describe("the finished-run push", () => {
  const input = {
    conversation_id: "c1",
    run_id: "r1",
    status: "completed" as const,
    conversationName: "Fix",
  };

  it("ends its body with the run's changes when it moved them, within the text limit", () => {
    const push = runFinishedPush(
      { ...input, text: "Done.", changes: { files: 3, additions: 12, deletions: 4 } },
      0,
    );
    expect(push.texts.body).toBe("Done. · 3 files +12 \u22124");
    expect(runFinishedPush({ ...input, text: "Done." }, 0).texts.body).toBe("Done.");
    expect(
      runFinishedPush({ ...input, text: "x", changes: { files: 1, additions: 1, deletions: 0 } }, 0).texts
        .body,
    ).toBe("x · 1 file +1 \u22120");
    const long = runFinishedPush(
      { ...input, text: "y".repeat(1000), changes: { files: 2, additions: 1, deletions: 1 } },
      0,
    );
    const body = long.texts.body as string;
    expect(Array.from(body)).toHaveLength(LIMITS.pushTextChars);
    expect(body.endsWith("… · 2 files +1 \u22121")).toBe(true);
  });
});
