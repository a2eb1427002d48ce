/**
 * Conversations' git worktrees against real repositories in temp dirs: the branch `pheby/<id>` and
 * its collisions, a detached HEAD, a repository without a commit, a workspace that is a folder of
 * its repository, removal only when clean (the branch kept), the operator's list and prune, a
 * repository armed with hooks and filters (none runs), and, as root, git run as the agent's user.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GitRunner } from "../src/git/runner.js";
import { Store } from "../src/store/store.js";
import { openWorktreeAdmin, type PruneOutcome } from "../src/worktrees/admin.js";
import { createWorktree, freeBranchName, WorktreeError } from "../src/worktrees/create.js";
import { prepareWorktreesDir, type WorktreeContext } from "../src/worktrees/layout.js";
import { listWorktrees, removeWorktree } from "../src/worktrees/remove.js";
import { git, maliciousRepo, repoWith, tempDir } from "./git-fixtures.js";

const runner = new GitRunner();
const ID = "3f2a9c1e0b5d4e6f8a7b9c0d1e2f3a4b";
const context = (): WorktreeContext => ({
  git: runner,
  worktreesDir: join(tempDir("pheby-wt-"), "worktrees"),
});
const branches = (repo: string) =>
  git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split("\n").filter(Boolean);
const head = (dir: string, rev = "HEAD") => git(dir, "rev-parse", rev).trim();

describe("createWorktree", () => {
  it("checks the workspace's HEAD out on a new branch pheby/<first 8 of the id>, leaving the workspace as it was", async () => {
    const repo = repoWith({ "a.txt": "a\n" });
    const ctx = context();
    const made = await createWorktree(ctx, repo, ID);
    expect(made).toEqual({
      root: join(ctx.worktreesDir, ID),
      cwd: join(ctx.worktreesDir, ID),
      branch: "pheby/3f2a9c1e",
      commit: head(repo),
    });
    expect(readFileSync(join(made.root, "a.txt"), "utf8")).toBe("a\n");
    expect(head(made.root)).toBe(head(repo));
    expect(git(made.root, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("pheby/3f2a9c1e");
    // The workspace stays on its branch, untouched.
    expect(git(repo, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("main");
    expect(git(repo, "status", "--porcelain")).toBe("");
    // What the agent writes in the worktree is not in the workspace.
    writeFileSync(join(made.cwd, "new.txt"), "n\n");
    expect(existsSync(join(repo, "new.txt"))).toBe(false);
  });

  it("takes pheby/<id>-2, -3… when the name is taken, also by a branch below it", async () => {
    const repo = repoWith({ "a.txt": "a\n" });
    git(repo, "branch", "pheby/3f2a9c1e");
    const ctx = context();
    expect((await createWorktree(ctx, repo, ID)).branch).toBe("pheby/3f2a9c1e-2");
    // Another conversation of the same 8 first characters.
    expect((await createWorktree(ctx, repo, `${ID.slice(0, 8)}ffffffff`)).branch).toBe("pheby/3f2a9c1e-3");
    expect(branches(repo)).toEqual(
      expect.arrayContaining(["pheby/3f2a9c1e", "pheby/3f2a9c1e-2", "pheby/3f2a9c1e-3"]),
    );
    expect(freeBranchName("pheby/x", ["refs/heads/pheby/x/y"])).toBe("pheby/x-2");
    expect(freeBranchName("pheby/x", ["refs/heads/pheby/xy", "refs/heads/pheby/x-2"])).toBe("pheby/x");
    expect(freeBranchName("pheby/x", ["refs/heads/pheby/x", "refs/heads/pheby/x-2"])).toBe("pheby/x-3");
  });

  it("branches a detached HEAD from its commit", async () => {
    const repo = repoWith({ "a.txt": "one\n" });
    const first = head(repo);
    writeFileSync(join(repo, "a.txt"), "two\n");
    git(repo, "commit", "-q", "-am", "second");
    git(repo, "checkout", "-q", "--detach", first);
    const made = await createWorktree(context(), repo, ID);
    expect(made.commit).toBe(first);
    expect(head(made.root)).toBe(first);
    expect(readFileSync(join(made.root, "a.txt"), "utf8")).toBe("one\n");
    expect(git(made.root, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("pheby/3f2a9c1e");
  });

  it("refuses a repository without a commit, and a workspace outside any repository, with a typed error and nothing made", async () => {
    const empty = tempDir();
    git(empty, "init", "-q");
    const ctx = context();
    const refused = (workspace: string) =>
      createWorktree(ctx, workspace, ID).then(
        () => {
          throw new Error("made a worktree");
        },
        (err: unknown) => err,
      );
    const noCommit = await refused(empty);
    expect(noCommit).toBeInstanceOf(WorktreeError);
    expect(noCommit).toMatchObject({
      code: "no_commit",
      message: "the workspace's git repository has no commit yet",
    });
    const notGit = await refused(tempDir("pheby-plain-"));
    expect(notGit).toMatchObject({ code: "not_git", message: "the workspace is not in a git repository" });
    // The messages are for a client: no path of the server.
    for (const err of [noCommit, notGit]) expect((err as Error).message).not.toContain("/");
    expect(existsSync(join(ctx.worktreesDir, ID))).toBe(false);
    expect(branches(empty)).toEqual([]);
  });

  it("starts a workspace that is a folder of its repository in the same folder of the worktree", async () => {
    const repo = repoWith({ "packages/site/index.html": "<p>\n", "README.md": "r\n" });
    const made = await createWorktree(context(), join(repo, "packages", "site"), ID);
    expect(made.cwd).toBe(join(made.root, "packages", "site"));
    expect(readFileSync(join(made.cwd, "index.html"), "utf8")).toBe("<p>\n");
    expect(existsSync(join(made.root, "README.md"))).toBe(true);
    // A folder the commit does not have (new, untracked) is made.
    mkdirSync(join(repo, "notes"));
    const other = await createWorktree(context(), join(repo, "notes"), ID);
    expect(other.cwd).toBe(join(other.root, "notes"));
    expect(statSync(other.cwd).isDirectory()).toBe(true);
  });

  it("runs none of an armed repository's hooks, fsmonitor or filters, in making it and removing it", async () => {
    const repo = maliciousRepo();
    const ctx = context();
    const made = await createWorktree(ctx, repo.dir, ID);
    // The smudge filter did not run: the files are the committed bytes.
    expect(readFileSync(join(made.root, "a.txt"), "utf8")).toBe("one\ntwo\n");
    expect(await removeWorktree(ctx, ID)).toEqual({ status: "removed", branch: "pheby/3f2a9c1e" });
    expect(repo.markers()).toEqual([]);
  });
});

describe("removeWorktree and listWorktrees", () => {
  it("removes a clean worktree and keeps its branch; keeps one with modified, staged or untracked files", async () => {
    const repo = repoWith({ "a.txt": "a\n" });
    const ctx = context();
    const ids = [
      "a0000000000000000000000000000001",
      "b0000000000000000000000000000002",
      "c0000000000000000000000000000003",
    ];
    const [modified, untracked, committed] = await Promise.all(
      ids.map((id) => createWorktree(ctx, repo, id)),
    );
    writeFileSync(join(modified!.root, "a.txt"), "changed\n");
    writeFileSync(join(untracked!.root, "new.txt"), "new\n");
    writeFileSync(join(committed!.root, "done.txt"), "done\n");
    git(committed!.root, "add", "done.txt");
    expect(await listWorktrees(ctx)).toEqual([
      { conversationId: ids[0], root: modified!.root, branch: "pheby/a0000000", state: "dirty" },
      { conversationId: ids[1], root: untracked!.root, branch: "pheby/b0000000", state: "dirty" },
      { conversationId: ids[2], root: committed!.root, branch: "pheby/c0000000", state: "dirty" },
    ]);
    expect(await removeWorktree(ctx, ids[0]!)).toEqual({ status: "dirty", branch: "pheby/a0000000" });
    expect(await removeWorktree(ctx, ids[1]!)).toEqual({ status: "dirty", branch: "pheby/b0000000" });
    expect(await removeWorktree(ctx, ids[2]!)).toEqual({ status: "dirty", branch: "pheby/c0000000" });
    expect(readFileSync(join(untracked!.root, "new.txt"), "utf8")).toBe("new\n");
    // Committed, the work is on the branch: the worktree goes, the branch and its commit stay.
    git(committed!.root, "commit", "-q", "-m", "done");
    const tip = head(committed!.root);
    expect(await removeWorktree(ctx, ids[2]!)).toEqual({ status: "removed", branch: "pheby/c0000000" });
    expect(existsSync(committed!.root)).toBe(false);
    expect(head(repo, "pheby/c0000000")).toBe(tip);
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain(committed!.root);
    expect(await removeWorktree(ctx, ids[2]!)).toEqual({ status: "absent" });
    expect(await removeWorktree(ctx, "d0000000000000000000000000000004")).toEqual({ status: "absent" });
  });

  it("lists a directory that is no worktree as broken and leaves it alone; refuses an id that is no plain name", async () => {
    const ctx = context();
    expect(await listWorktrees(ctx)).toEqual([]); // no directory yet
    prepareWorktreesDir(ctx.worktreesDir);
    mkdirSync(join(ctx.worktreesDir, "e0000000000000000000000000000005"));
    writeFileSync(join(ctx.worktreesDir, "e0000000000000000000000000000005", "keep"), "k");
    mkdirSync(join(ctx.worktreesDir, ".hidden"));
    expect(await listWorktrees(ctx)).toEqual([
      {
        conversationId: "e0000000000000000000000000000005",
        root: join(ctx.worktreesDir, "e0000000000000000000000000000005"),
        branch: null,
        state: "broken",
      },
    ]);
    expect(await removeWorktree(ctx, "e0000000000000000000000000000005")).toEqual({ status: "broken" });
    expect(existsSync(join(ctx.worktreesDir, "e0000000000000000000000000000005", "keep"))).toBe(true);
    await expect(removeWorktree(ctx, "../x")).rejects.toThrow(/conversation id/);
    await expect(createWorktree(ctx, repoWith({}), "..")).rejects.toThrow(/conversation id/);
  });
});

describe("openWorktreeAdmin (pheby-server worktrees)", () => {
  it("lists each worktree with its conversation's state, and prunes only the clean ones whose conversation is gone", async () => {
    const dataDir = join(tempDir("pheby-wt-data-"), "data");
    mkdirSync(dataDir);
    const worktreesDir = `${dataDir}-worktrees`;
    expect(openWorktreeAdmin(dataDir, worktreesDir)).toBeUndefined(); // no database: nothing opened or made
    const store = new Store(dataDir);
    const [live, deleted, dirtyDeleted, unknown] = [
      "10000000000000000000000000000001",
      "20000000000000000000000000000002",
      "30000000000000000000000000000003",
      "40000000000000000000000000000004",
    ] as const;
    for (const id of [live, deleted, dirtyDeleted])
      store.createConversation({ id, name: "c", session_id: null, source: "simulator", created_at: 1 });
    store.deleteConversation(deleted, 2);
    store.deleteConversation(dirtyDeleted, 2);
    store.close();
    const repo = repoWith({ "a.txt": "a\n" });
    const ctx = { git: runner, worktreesDir };
    for (const id of [live, deleted, dirtyDeleted, unknown]) await createWorktree(ctx, repo, id);
    writeFileSync(join(worktreesDir, dirtyDeleted, "wip.txt"), "wip\n");

    const admin = openWorktreeAdmin(dataDir, worktreesDir)!;
    try {
      expect((await admin.list()).map((w) => [w.conversationId, w.conversation, w.state])).toEqual([
        [live, "live", "clean"],
        [deleted, "deleted", "clean"],
        [dirtyDeleted, "deleted", "dirty"],
        [unknown, "unknown", "clean"],
      ]);
      const seen: Array<[string, PruneOutcome]> = [];
      expect(await admin.prune((w, outcome) => seen.push([w.conversationId, outcome]))).toBe(2);
      expect(seen).toEqual([
        [live, "kept: conversation exists"],
        [deleted, "removed"],
        [dirtyDeleted, "kept: uncommitted changes"],
        [unknown, "removed"],
      ]);
      expect((await admin.list()).map((w) => w.conversationId)).toEqual([live, dirtyDeleted]);
      // Every branch stays.
      expect(branches(repo).filter((b) => b.startsWith("pheby/"))).toHaveLength(4);
    } finally {
      admin.close();
    }
  });
});

describe.runIf(process.getuid?.() === 0)("as the agent's user (root only)", () => {
  it("makes the worktree, its branch and its administrative files the agent user's (umask 0007), and removes it as that user", async () => {
    const nobody = { uid: 65534, gid: 65534 };
    const repo = repoWith({ "a.txt": "a\n" });
    // The desk user's repository: theirs, files and .git alike.
    git(repo, "config", "core.sharedRepository", "false");
    chownTree(repo, nobody);
    const parent = tempDir("pheby-wt-");
    chmodSync(parent, 0o755); // as /var/lib is: the agent's user passes through
    const ctx: WorktreeContext = { git: runner, worktreesDir: join(parent, "worktrees"), user: nobody };
    // The worktrees directory is reachable by the agent's group only.
    prepareWorktreesDir(ctx.worktreesDir, nobody.gid);
    expect(statSync(ctx.worktreesDir)).toMatchObject({ gid: nobody.gid });
    expect(statSync(ctx.worktreesDir).mode & 0o7777).toBe(0o2770);
    const made = await createWorktree(ctx, repo, ID);
    for (const path of [
      made.root,
      join(made.root, "a.txt"),
      join(repo, ".git", "worktrees", ID),
      join(repo, ".git", "refs", "heads", "pheby"),
    ])
      expect(statSync(path).uid).toBe(nobody.uid);
    // With the agent's umask (0007): Pheby reads it through the shared group, others not at all.
    expect(statSync(join(made.root, "a.txt")).mode & 0o777).toBe(0o660);
    expect(await removeWorktree(ctx, ID)).toEqual({ status: "removed", branch: "pheby/3f2a9c1e" });
    expect(existsSync(made.root)).toBe(false);
    // A workspace folder the commit lacks is made as the agent's user too.
    mkdirSync(join(repo, "notes"));
    chownSync(join(repo, "notes"), nobody.uid, nobody.gid);
    const other = await createWorktree(ctx, join(repo, "notes"), ID);
    expect(statSync(other.cwd)).toMatchObject({ uid: nobody.uid, gid: nobody.gid });
  });
});

/** chown -R, with plain Node. */
function chownTree(dir: string, user: { uid: number; gid: number }) {
  const walk = (path: string) => {
    chownSync(path, user.uid, user.gid);
    if (statSync(path).isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
}
