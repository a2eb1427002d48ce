/**
 * The hardened git runner against real repositories: a repository armed with every way git has to run
 * a command (hooks, core.hooksPath, core.fsmonitor, diff.external, a diff driver's command and
 * textconv, clean/smudge/process filters, an included config, pager, gpg) runs none of them through
 * the runner, across the commands Pheby uses; plain git on the same repository runs them (so the traps
 * are live). Also: the timeout kills git's process group, stdout is bounded, Pheby's environment does
 * not leak into git, and a repository owned by another user is trusted for its own path.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GitFailedError, GitTimeoutError } from "../src/git/errors.js";
import { filterDriverNames } from "../src/git/hardening.js";
import { GitRunner } from "../src/git/runner.js";
import { git, maliciousRepo, repoWith, tempDir } from "./git-fixtures.js";

const runner = new GitRunner();

/** Dirty the armed repository the way an agent would: modified, new and deleted files of every attribute. */
function dirty(dir: string) {
  writeFileSync(join(dir, "a.txt"), "one\nTWO\nthree\n");
  writeFileSync(join(dir, "b.md"), "# b changed\n");
  writeFileSync(join(dir, "new.txt"), "new\n");
  writeFileSync(join(dir, "data.bin"), "bin\n");
  writeFileSync(join(dir, "plain.js"), "plain changed\n");
}

describe("the hardened git runner against a malicious repository", () => {
  it("plain git on the armed repository does run the traps (the fixture is live)", () => {
    const repo = maliciousRepo();
    dirty(repo.dir);
    // Some of them fail (a required filter with no smudge); what matters is what ran.
    const attempt = (...args: string[]) => {
      try {
        git(repo.dir, ...args);
      } catch {}
    };
    attempt("diff", "HEAD");
    attempt("diff", "HEAD", "--", "plain.js");
    attempt("diff", "--no-ext-diff", "HEAD", "--", "a.txt");
    attempt("status", "--porcelain");
    attempt("checkout", "-q", "-b", "elsewhere");
    expect(repo.markers()).toEqual(
      expect.arrayContaining([
        "diff-driver-command",
        "diff-external",
        "filter-clean",
        "fsmonitor",
        "hookspath-post-checkout",
        "included-filter-clean",
        "textconv",
      ]),
    );
  });

  it("runs none of them across the commands Pheby uses", async () => {
    const repo = maliciousRepo();
    dirty(repo.dir);
    const run = (args: string[], okCodes?: number[]) => runner.run(args, { cwd: repo.dir, okCodes });
    const head = (await run(["rev-parse", "HEAD"])).stdout.toString().trim();
    expect(head).toMatch(/^[0-9a-f]{40}$/);
    await run(["rev-parse", "--show-toplevel", "--abbrev-ref", "HEAD"]);
    expect(
      (await run(["status", "--porcelain=v1", "-z", "--untracked-files=all"])).stdout.toString(),
    ).toContain("a.txt");
    const numstat = (await run(["diff", head, "--numstat", "-z", "-M"])).stdout.toString();
    expect(numstat).toContain("a.txt");
    const patch = (await run(["diff", head, "-U3", "--", "a.txt", "b.md"])).stdout.toString();
    expect(patch).toContain("+TWO");
    await run(["diff", "--cached", head]);
    await run(["ls-files", "--others", "--exclude-standard", "-z"]);
    await run(["ls-files", "-s", "-z"]);
    await run(["diff", head, "--", "plain.js"]);
    for (const untracked of ["new.txt", "data.bin"])
      expect(
        (await run(["diff", "--no-index", "--", "/dev/null", untracked], [0, 1])).stdout.toString(),
      ).toContain(`+++ b/${untracked}`);
    await run(["log", "-1", "-p"]);
    await run(["show", "HEAD"]);
    await run(["cat-file", "-p", `${head}:a.txt`]);
    await run(["for-each-ref", "refs/heads"]);
    const worktree = join(tempDir(), "wt");
    await run(["worktree", "add", "-q", "-b", "pheby/abc", worktree, "HEAD"]);
    expect(readFileSync(join(worktree, "a.txt"), "utf8")).toBe("one\ntwo\n");
    await runner.run(["status", "--porcelain"], { cwd: worktree });
    await run(["worktree", "remove", worktree]);
    expect(existsSync(worktree)).toBe(false);
    await run(["add", "-A"]);
    await runner.run(["commit", "-q", "-m", "through the runner"], {
      cwd: repo.dir,
      identity: { name: "Pheby", email: "pheby@localhost" },
    });
    await run(["worktree", "prune"]);
    expect(repo.markers()).toEqual([]);
  });

  it("keeps Pheby's own environment out of git (GIT_EXTERNAL_DIFF, GIT_DIR…)", async () => {
    const repo = maliciousRepo();
    dirty(repo.dir);
    const other = repoWith({ "z.txt": "z\n" });
    const saved = { ...process.env };
    process.env.GIT_EXTERNAL_DIFF = join(repo.markerDir, "..", "nope");
    process.env.GIT_DIR = join(other, ".git");
    try {
      const out = (await runner.run(["diff", "HEAD", "--name-only"], { cwd: repo.dir })).stdout.toString();
      expect(out).toContain("a.txt");
    } finally {
      process.env = saved;
    }
    expect(repo.markers()).toEqual([]);
  });

  it("reads filter driver names from git config's NUL-separated keys, dots and = included", () => {
    expect(
      filterDriverNames("filter.evil.clean\0filter.evil.smudge\0filter.a.b=c.process\0filter.x\0"),
    ).toEqual(["evil", "a.b=c"]);
  });
});

describe("the runner's bounds", () => {
  it("throws GitTimeoutError and kills git's whole process group when it does not answer in time", async () => {
    const dir = tempDir();
    const pidFile = join(dir, "pid");
    const fake = join(dir, "fake-git");
    writeFileSync(fake, `#!/bin/sh\nsleep 600 &\necho $! > '${pidFile}'\nwait\n`, { mode: 0o755 });
    const slow = new GitRunner({ command: fake, timeoutMs: 300 });
    const error = await slow.run(["status"], { cwd: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitTimeoutError);
    const pid = Number(readFileSync(pidFile, "utf8"));
    await expect.poll(() => alive(pid)).toBe(false);
  });

  it("keeps stdout up to the limit: exactly at it whole, one byte more truncated", async () => {
    const content = "x".repeat(999) + "\n";
    const dir = repoWith({ "f.txt": content });
    const show = (max: number) => runner.run(["show", "HEAD:f.txt"], { cwd: dir, maxStdoutBytes: max });
    const whole = await show(1000);
    expect(whole).toMatchObject({ truncated: false, code: 0 });
    expect(whole.stdout.toString()).toBe(content);
    const cut = await show(999);
    expect(cut.truncated).toBe(true);
    expect(cut.stdout.toString()).toBe(content.slice(0, 999));
  });

  it("throws GitFailedError on an unexpected exit code, and when git cannot be started", async () => {
    const dir = tempDir();
    await expect(runner.run(["rev-parse", "HEAD"], { cwd: dir })).rejects.toBeInstanceOf(GitFailedError);
    const missing = new GitRunner({ command: join(dir, "no-such-git") });
    await expect(missing.run(["status"], { cwd: dir })).rejects.toMatchObject({ code: null });
  });

  it("refuses argv that is not a subcommand first", async () => {
    await expect(runner.run(["-c", "core.pager=x", "status"], { cwd: tempDir() })).rejects.toThrow(
      /subcommand/,
    );
  });
});

describe("safe.directory", () => {
  it.skipIf(process.getuid?.() !== 0)(
    "trusts a repository another user owns at its own path (plain git refuses it)",
    async () => {
      const dir = repoWith({ "a.txt": "a\n" });
      chownR(dir, 65534);
      expect(statSync(dir).uid).toBe(65534);
      expect(() => git(dir, "status")).toThrow(/dubious ownership/);
      const sub = join(dir, "sub");
      execFileSync("mkdir", [sub]);
      const head = await runner.run(["rev-parse", "HEAD"], { cwd: sub });
      expect(head.stdout.toString().trim()).toMatch(/^[0-9a-f]{40}$/);
    },
  );
});

/** The process exists and is not a zombie waiting to be reaped (it was killed, its parent gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

function chownR(dir: string, uid: number) {
  execFileSync("chown", ["-R", `${uid}:${uid}`, dir]);
  chownSync(dir, uid, uid);
}
