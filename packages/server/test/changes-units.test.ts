/**
 * The changes extension's reading of a real work tree, through the hardened git runner: statuses,
 * types, binary, untracked and ignored files, renames, a symlink to outside the repository, names
 * with a newline, a quote or bytes that are not UTF-8, a 10 MB file (its patch cut), the patch bound
 * at its limit and one byte past it, and a repository armed with malicious config (nothing runs).
 */
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LIMITS } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import {
  type Change,
  fileIdOf,
  findChange,
  headCommit,
  listChanges,
  patchOf,
} from "../src/changes/reader.js";
import { GitRunner } from "../src/git/runner.js";
import { git, maliciousRepo, repoWith, tempDir } from "./git-fixtures.js";

const runner = new GitRunner();

async function changesOf(dir: string) {
  const base = (await headCommit(runner, dir)) as string;
  const list = await listChanges(runner, dir, base);
  const byPath = new Map(list.changes.map((c) => [c.path, c]));
  const patch = async (path: string) => {
    const change = byPath.get(path);
    if (!change) throw new Error(`${path} is not listed`);
    return patchOf(runner, dir, base, change, LIMITS.changesPatchBytes);
  };
  return { base, list, byPath, patch };
}

/** The wire fields of a change. */
const wire = ({ raw: _raw, untracked: _untracked, ...file }: Change) => file;

describe("listing a work tree's changes against its base", () => {
  it("names statuses, types, counts and binary; untracked yes, ignored no; renames staged by git mv", async () => {
    const dir = repoWith({
      ".gitignore": "*.log\n",
      "keep.txt": "a\nb\nc\n",
      "gone.txt": "x\n",
      "moved.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
      "logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]),
      link: "placeholder\n",
    });
    writeFileSync(join(dir, "keep.txt"), "a\nB\nc\nd\n");
    rmSync(join(dir, "gone.txt"));
    git(dir, "mv", "moved.txt", "renamed.txt");
    writeFileSync(join(dir, "logo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 9, 9, 9]));
    rmSync(join(dir, "link"));
    symlinkSync("keep.txt", join(dir, "link"));
    writeFileSync(join(dir, "new.txt"), "one\ntwo"); // no final newline: still two lines
    writeFileSync(join(dir, "debug.log"), "ignored\n");
    const { list, byPath, base } = await changesOf(dir);
    expect(list.changes.map(wire)).toEqual([
      {
        file_id: fileIdOf(base, Buffer.from("gone.txt")),
        path: "gone.txt",
        status: "deleted",
        type: "file",
        additions: 0,
        deletions: 1,
        binary: false,
      },
      {
        file_id: fileIdOf(base, Buffer.from("keep.txt")),
        path: "keep.txt",
        status: "modified",
        type: "file",
        additions: 2,
        deletions: 1,
        binary: false,
      },
      {
        file_id: fileIdOf(base, Buffer.from("link")),
        path: "link",
        status: "type_changed",
        type: "symlink",
        additions: 1,
        deletions: 1,
        binary: false,
      },
      {
        file_id: fileIdOf(base, Buffer.from("logo.png")),
        path: "logo.png",
        status: "modified",
        type: "file",
        additions: 0,
        deletions: 0,
        binary: true,
      },
      {
        file_id: fileIdOf(base, Buffer.from("new.txt")),
        path: "new.txt",
        status: "added",
        type: "file",
        additions: 2,
        deletions: 0,
        binary: false,
      },
      {
        file_id: fileIdOf(base, Buffer.from("renamed.txt")),
        path: "renamed.txt",
        old_path: "moved.txt",
        status: "renamed",
        type: "file",
        additions: 0,
        deletions: 0,
        binary: false,
      },
    ]);
    expect(byPath.has("debug.log")).toBe(false);
    expect(list).toMatchObject({ additions: 5, deletions: 3 });
  });

  it("finds each listed change by its ID from the paths alone, exactly as listed (a rename by its new path); a stale or unknown ID finds nothing", async () => {
    const dir = repoWith({
      "keep.txt": "a\nb\nc\n",
      "gone.txt": "x\n",
      "moved.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
      "logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]),
      link: "placeholder\n",
    });
    writeFileSync(join(dir, "keep.txt"), "a\nB\nc\nd\n");
    rmSync(join(dir, "gone.txt"));
    git(dir, "mv", "moved.txt", "renamed.txt");
    writeFileSync(join(dir, "renamed.txt"), "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n"); // renamed and edited
    writeFileSync(join(dir, "logo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 9, 9, 9]));
    rmSync(join(dir, "link"));
    symlinkSync("keep.txt", join(dir, "link"));
    writeFileSync(join(dir, "new.txt"), "one\ntwo");
    writeFileSync(join(dir, "u.bin"), Buffer.from([7, 0, 7]));
    mkdirSync(join(dir, "nested"));
    git(join(dir, "nested"), "init", "-q");
    const { list, base } = await changesOf(dir);
    expect(list.changes.map((c) => c.path)).toEqual([
      "gone.txt",
      "keep.txt",
      "link",
      "logo.png",
      "nested",
      "new.txt",
      "renamed.txt",
      "u.bin",
    ]);
    expect(list.changes.find((c) => c.path === "renamed.txt")).toMatchObject({
      old_path: "moved.txt",
      status: "renamed",
      additions: 1,
    });
    for (const change of list.changes)
      expect(await findChange(runner, dir, base, change.file_id)).toEqual(change);
    // The old path of a rename is no ID; neither is a path that does not differ.
    expect(await findChange(runner, dir, base, fileIdOf(base, Buffer.from("moved.txt")))).toBeNull();
    expect(await findChange(runner, dir, base, fileIdOf(base, Buffer.from("a-ghost.txt")))).toBeNull();
    const keep = list.changes.find((c) => c.path === "keep.txt") as Change;
    // Changed back to the base, or an untracked file removed: the ID is stale.
    writeFileSync(join(dir, "keep.txt"), "a\nb\nc\n");
    rmSync(join(dir, "new.txt"));
    expect(await findChange(runner, dir, base, keep.file_id)).toBeNull();
    expect(await findChange(runner, dir, base, fileIdOf(base, Buffer.from("new.txt")))).toBeNull();
  });

  it("counts many untracked files, each as its own, in path order", async () => {
    const dir = repoWith({ "a.txt": "a\n" });
    const names = Array.from({ length: 30 }, (_, i) => `u${String(i).padStart(2, "0")}.txt`);
    for (const [i, name] of names.entries()) writeFileSync(join(dir, name), "x\n".repeat(i));
    const { list } = await changesOf(dir);
    expect(list.changes.map((c) => [c.path, c.additions])).toEqual(names.map((name, i) => [name, i]));
    expect(list.additions).toBe((29 * 30) / 2);
  });

  it("gives each file an ID from the base and its path: the same on every list, another for another base", async () => {
    const dir = repoWith({ "a.txt": "a\n" });
    writeFileSync(join(dir, "a.txt"), "b\n");
    const first = await changesOf(dir);
    const again = await changesOf(dir);
    expect(again.byPath.get("a.txt")?.file_id).toBe(first.byPath.get("a.txt")?.file_id);
    expect(first.byPath.get("a.txt")?.file_id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(fileIdOf("0".repeat(40), Buffer.from("a.txt"))).not.toBe(first.byPath.get("a.txt")?.file_id);
  });

  it("reads names with a newline, a quote or invalid UTF-8 (U+FFFD), and diffs them", async () => {
    const dir = repoWith({ 'say "hi".txt': "hi\n", "two\nlines.txt": "x\n" });
    writeFileSync(join(dir, 'say "hi".txt'), "hello\n");
    writeFileSync(join(dir, "two\nlines.txt"), "y\n");
    writeFileSync(
      Buffer.concat([Buffer.from(`${dir}/bad-`), Buffer.from([0xff, 0xfe]), Buffer.from(".txt")]),
      "z\n",
    );
    const { byPath, patch } = await changesOf(dir);
    expect([...byPath.keys()].sort()).toEqual(["bad-\uFFFD\uFFFD.txt", 'say "hi".txt', "two\nlines.txt"]);
    expect((await patch('say "hi".txt')).patch).toContain("+hello\n");
    expect((await patch("two\nlines.txt")).patch).toContain("+y\n");
    const bad = await patch("bad-\uFFFD\uFFFD.txt");
    expect(bad.patch).toContain("--- /dev/null");
    expect(bad.patch).toContain("+z\n");
  });

  it("a symlink to outside the repository is its target string, never the file it points to", async () => {
    const outside = join(tempDir(), "secret.txt");
    writeFileSync(outside, "the outside file's content\n");
    const dir = repoWith({ "a.txt": "a\n", "tracked-link": "x\n" });
    symlinkSync(outside, join(dir, "new-link"));
    rmSync(join(dir, "tracked-link"));
    symlinkSync(outside, join(dir, "tracked-link"));
    const { byPath, patch } = await changesOf(dir);
    expect(byPath.get("new-link")).toMatchObject({
      status: "added",
      type: "symlink",
      additions: 1,
      binary: false,
    });
    for (const name of ["new-link", "tracked-link"]) {
      const { patch: text } = await patch(name);
      expect(text).toContain(`+${outside}`);
      expect(text).not.toContain("the outside file's content");
    }
  });

  it("a binary file's patch is null; a deleted file's removes its lines", async () => {
    const dir = repoWith({ "b.bin": Buffer.from([0, 1, 2]), "d.txt": "1\n2\n" });
    writeFileSync(join(dir, "b.bin"), Buffer.from([0, 3]));
    writeFileSync(join(dir, "u.bin"), Buffer.from([7, 0, 7]));
    rmSync(join(dir, "d.txt"));
    const { patch, byPath } = await changesOf(dir);
    expect(await patch("b.bin")).toEqual({ patch: null, truncated: false });
    expect(byPath.get("u.bin")).toMatchObject({ binary: true, status: "added" });
    expect(await patch("u.bin")).toEqual({ patch: null, truncated: false });
    expect((await patch("d.txt")).patch).toMatch(/^-1\n-2\n/m);
  });

  it("a plain mv is a deletion and an untracked file (no index, no rename)", async () => {
    const dir = repoWith({ "old.txt": "a\n" });
    renameSync(join(dir, "old.txt"), join(dir, "new.txt"));
    const { byPath } = await changesOf(dir);
    expect(byPath.get("old.txt")?.status).toBe("deleted");
    expect(byPath.get("new.txt")?.status).toBe("added");
  });

  it("cuts a 10 MB file's patch at a line end within 256 KiB, tracked or untracked", async () => {
    const line = `${"0123456789".repeat(9)}\n`; // 91 bytes
    const big = line.repeat(Math.ceil((10 * 1024 * 1024) / line.length));
    const dir = repoWith({ "big.txt": "small\n" });
    writeFileSync(join(dir, "big.txt"), big);
    writeFileSync(join(dir, "big-new.txt"), big);
    const { patch, byPath } = await changesOf(dir);
    expect(byPath.get("big-new.txt")?.additions).toBe(big.length / line.length);
    for (const name of ["big.txt", "big-new.txt"]) {
      const { patch: text, truncated } = await patch(name);
      expect(truncated).toBe(true);
      expect(Buffer.byteLength(text as string)).toBeLessThanOrEqual(LIMITS.changesPatchBytes);
      expect(Buffer.byteLength(text as string)).toBeGreaterThan(LIMITS.changesPatchBytes - 200);
      expect(text?.endsWith("\n")).toBe(true);
    }
  });

  it("keeps a patch of exactly 256 KiB whole and cuts one of 256 KiB + 1", async () => {
    const dir = repoWith({ "seed.txt": "seed\n" });
    const lines = (last: number) => `${`${"x".repeat(99)}\n`.repeat(2000)}${"y".repeat(last)}\n`;
    const sizeWith = async (last: number) => {
      writeFileSync(join(dir, "edge.txt"), lines(last));
      const { patch } = await changesOf(dir);
      return patch("edge.txt");
    };
    const probe = await sizeWith(10);
    const exact = 10 + LIMITS.changesPatchBytes - Buffer.byteLength(probe.patch as string);
    const atLimit = await sizeWith(exact);
    expect(Buffer.byteLength(atLimit.patch as string)).toBe(LIMITS.changesPatchBytes);
    expect(atLimit.truncated).toBe(false);
    const past = await sizeWith(exact + 1);
    expect(past.truncated).toBe(true);
    expect(past.patch?.endsWith(`${"x".repeat(99)}\n`)).toBe(true);
  });

  it("runs none of a malicious repository's hooks, drivers or filters while listing and diffing", async () => {
    const repo = maliciousRepo();
    writeFileSync(join(repo.dir, "a.txt"), "one\nTWO\n");
    writeFileSync(join(repo.dir, "b.md"), "# b!\n");
    writeFileSync(join(repo.dir, "plain.js"), "changed\n");
    writeFileSync(join(repo.dir, "new.txt"), "new\n");
    writeFileSync(join(repo.dir, "data.bin"), "bin\n");
    mkdirSync(join(repo.dir, "sub", "deeper"));
    writeFileSync(join(repo.dir, "sub", "deeper", "x.md"), "x\n");
    const { list, patch } = await changesOf(repo.dir);
    expect(list.changes.map((c) => c.path)).toEqual([
      "a.txt",
      "b.md",
      "data.bin",
      "new.txt",
      "plain.js",
      "sub/deeper/x.md",
    ]);
    for (const change of list.changes) await patch(change.path);
    expect((await patch("a.txt")).patch).toContain("+TWO"); // the real content: no textconv, no filter
    expect(repo.markers()).toEqual([]);
  });

  it("has no base before the first commit", async () => {
    const dir = tempDir();
    git(dir, "init", "-q");
    expect(await headCommit(runner, dir)).toBeNull();
  });
});

describe("submodules, nested repositories and names git cannot be handed", () => {
  it("a submodule moved to another commit is type submodule; its dirty work tree is never entered (its own fsmonitor does not run)", async () => {
    const inner = repoWith({ "lib.txt": "v1\n" });
    const dir = repoWith({ "a.txt": "a\n" });
    git(dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", inner, "sub");
    git(dir, "commit", "-q", "-m", "submodule");
    const sub = join(dir, "sub");
    writeFileSync(join(sub, "lib.txt"), "v2\n");
    git(sub, "commit", "-q", "-am", "v2");
    writeFileSync(join(sub, "lib.txt"), "dirty\n"); // uncommitted inside the submodule
    const markers = tempDir();
    const trap = join(tempDir(), "fsmonitor");
    writeFileSync(trap, `#!/bin/sh\ntouch '${join(markers, "submodule-fsmonitor")}'\n`, { mode: 0o755 });
    git(sub, "config", "core.fsmonitor", trap);
    mkdirSync(join(dir, "nested"));
    git(join(dir, "nested"), "init", "-q");
    const { list, patch } = await changesOf(dir);
    expect(list.changes.map(wire).map(({ file_id: _, ...f }) => f)).toEqual([
      { path: "nested", status: "added", type: "submodule", additions: 0, deletions: 0, binary: false },
      { path: "sub", status: "modified", type: "submodule", additions: 1, deletions: 1, binary: false },
    ]);
    expect((await patch("sub")).patch).toMatch(
      /-Subproject commit [0-9a-f]{40}\n\+Subproject commit [0-9a-f]{40}\n/,
    );
    expect(await patch("nested")).toEqual({ patch: "", truncated: false });
    expect(readdirSync(markers)).toEqual([]);
  });

  it("diffs a tracked file whose name is not UTF-8 (a glob pathspec stands in for it)", async () => {
    const dir = repoWith({ "a.txt": "a\n" });
    const name = Buffer.concat([Buffer.from(`${dir}/caf`), Buffer.from([0xe9]), Buffer.from(".txt")]);
    writeFileSync(name, "old\n");
    git(dir, "add", "-A");
    git(dir, "commit", "-q", "-m", "latin-1 name");
    writeFileSync(name, "new\n");
    const { byPath, patch } = await changesOf(dir);
    expect([...byPath.keys()]).toEqual(["caf\uFFFD.txt"]);
    const text = (await patch("caf\uFFFD.txt")).patch;
    expect(text).toContain("-old\n+new\n");
  });
});
