// The `changes` extension on the wire: a real git repository of 2,000 tracked files in a temp dir, a
// real Pheby server (child process, the simulator working in that repository) on 127.0.0.1:0, and a
// real WebSocket. With 100 and then 1,000 of the files modified (plus untracked ones):
//
// 1. `changes.list` latency (request → `changes.snapshot`), against the same two git commands run bare
//    from this process in the same run (`git diff <base> --raw --numstat -z -M` and
//    `git ls-files --others --exclude-standard -z`, concurrently, as the server runs them).
// 2. `changes.diff` of one modified file, against a bare `git diff <base> -- <file>`, and against what
//    it runs bare (the paths alone to check the file ID, that file's numstat, the diff).
// 3. The hardened runner's cost per command: GitRunner.run(["rev-parse", "HEAD"]) in this process
//    against a bare `git rev-parse HEAD`, and against the two commands the runner spawns
//    (`git config --get-regexp` for the filter drivers, then the command) run bare one after the other.
//
// To show where the list's time goes, two steps between bare git and the wire are timed too: the bare
// commands each preceded by the `git config --get-regexp` the runner spawns first, and the server's
// own reader (listChanges: the hardened runner, parsing, untracked files' line counts) in this process.
// Server and bare runs alternate, so the machine's load falls on both alike. Internal modules of
// @pheby/server are imported from its source: they are not part of its public API.
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FEATURE_CHANGES, LIMITS } from "@pheby/protocol";
import { listChanges } from "../../packages/server/src/changes/reader.js";
import { GitRunner } from "../../packages/server/src/git/runner.js";
import { BenchClient } from "./client.js";
import { median, percentile, spawnServer, table } from "./harness.js";

const TRACKED = Number(process.env.BENCH_CHANGES_FILES ?? 2_000);
const STAGES = [
  { modified: 100, untracked: 10 },
  { modified: 1_000, untracked: 50 },
].filter((s) => s.modified <= TRACKED);
const RUNS = Number(process.env.BENCH_CHANGES_RUNS ?? 31);
const WARMUP = 3;
const LINES = 40;

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-changes-"));
const repo = join(dir, "repo");
const folderOf = (i: number) => `src/d${(i % 20).toString().padStart(2, "0")}`;
const nameOf = (i: number) => `${folderOf(i)}/file${i}.ts`;
const linesOf = (i: number, n: number) =>
  Array.from({ length: n }, (_, l) => `export const v${i}_${l} = ${(i * 31 + l) % 997}; // line ${l}`);

/** Bare git, as anyone would run it from Node.js: no hardening, no second command. */
function bare(args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile("git", args, { cwd: repo, encoding: "buffer", maxBuffer: 64 * 1024 * 1024 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
}

/** Milliseconds `fn` took. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

interface Stat {
  median: number;
  p95: number;
}
const statOf = (samples: number[]): Stat => ({
  median: median(samples),
  p95: percentile(
    samples.slice().sort((a, b) => a - b),
    95,
  ),
});

/** Median and p95 of each function over RUNS alternating rounds (after WARMUP rounds). */
async function alternate(fns: Array<() => Promise<unknown>>): Promise<Stat[]> {
  const samples: number[][] = fns.map(() => []);
  for (let r = 0; r < WARMUP + RUNS; r++) {
    for (const [i, fn] of fns.entries()) {
      const ms = await timed(fn);
      if (r >= WARMUP) samples[i]!.push(ms);
    }
  }
  return samples.map(statOf);
}

// The repository: TRACKED files of LINES lines in 20 folders, one commit.
process.stderr.write(`changes: a repository of ${TRACKED} files\n`);
for (let i = 0; i < TRACKED; i++) {
  const path = join(repo, nameOf(i));
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, `${linesOf(i, LINES).join("\n")}\n`);
}
const g = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });
g("init", "-q", "-b", "main");
g("add", "-A");
g("-c", "user.name=bench", "-c", "user.email=bench@127.0.0.1", "commit", "-q", "-m", "base");
const base = g("rev-parse", "HEAD").trim();

const server = await spawnServer("./pheby-server.ts", {
  BENCH_WORKDIR: repo,
  BENCH_DATA_DIR: mkdtempSync(join(dir, "data-")),
});
try {
  const client = await BenchClient.connect(server.port, true, [FEATURE_CHANGES]);
  const conversation = (await client.request({ type: "conversation.create" }, "conversation.created"))
    .conversation_id!;
  const list = () =>
    client.request({ type: "changes.list", conversation_id: conversation }, "changes.snapshot");
  const bareList = () =>
    Promise.all([
      bare(["diff", base, "--raw", "--numstat", "-z", "-M"]),
      bare(["ls-files", "--others", "--exclude-standard", "-z"]),
    ]);

  const bareConfig = () =>
    bare(["config", "--null", "--name-only", "--get-regexp", "^filter\\."]).catch(() => undefined);
  // The runner's two spawns per command, bare: what its double spawn costs without the rest.
  const bareListTwice = () =>
    Promise.all([
      bareConfig().then(() => bare(["diff", base, "--raw", "--numstat", "-z", "-M"])),
      bareConfig().then(() => bare(["ls-files", "--others", "--exclude-standard", "-z"])),
    ]);
  const runner = new GitRunner();
  // The reader's two commands exactly as it runs them (its args, through the runner), nothing else.
  const hardenedList = () =>
    Promise.all([
      runner.run(["diff", base, "--raw", "--numstat", "-z", "-M", "--no-relative", "--"], { cwd: repo }),
      runner.run(["ls-files", "--others", "--exclude-standard", "-z"], { cwd: repo }),
    ]);
  const reader = () => listChanges(runner, repo, base);

  const rows: Record<string, string | number>[] = [];
  const ratio = (ours: Stat, baseline: Stat) => `${(ours.median / baseline.median).toFixed(2)}×`;
  const row = (operation: string, ours: Stat, baseline: Stat, note: string) => ({
    operation,
    "ours median ms": ours.median.toFixed(1),
    "ours p95 ms": ours.p95.toFixed(1),
    "bare median ms": baseline.median.toFixed(1),
    "bare p95 ms": baseline.p95.toFixed(1),
    "ours / bare": ratio(ours, baseline),
    note,
  });

  let modified = 0;
  let untracked = 0;
  for (const stage of STAGES) {
    // Modify the next files (one line changed, two added) and add untracked ones, in the same folders.
    for (; modified < stage.modified; modified++) {
      const lines = linesOf(modified, LINES);
      lines[LINES / 2] = `export const changed${modified} = ${modified};`;
      lines.push(`export const added${modified}a = 1;`, `export const added${modified}b = 2;`);
      writeFileSync(join(repo, nameOf(modified)), `${lines.join("\n")}\n`);
    }
    for (; untracked < stage.untracked; untracked++)
      writeFileSync(
        join(repo, `${folderOf(untracked)}/new${untracked}.ts`),
        `${linesOf(-untracked, 20).join("\n")}\n`,
      );
    process.stderr.write(`changes: ${modified} modified + ${untracked} untracked, ${RUNS} runs each\n`);

    const snapshot = await list();
    const files = snapshot.files as Array<{ file_id: string; path: string; status: string }>;
    const expected = Math.min(LIMITS.changesFiles, modified + untracked);
    if (files.length !== expected)
      throw new Error(`changes.list gave ${files.length} files, not ${expected}`);
    const [bareDiff, bareOthers] = await bareList();
    const bareUntracked = bareOthers.toString("latin1").split("\0").length - 1;
    if (bareDiff.length === 0 || bareUntracked !== untracked)
      throw new Error(`bare git listed ${bareUntracked} untracked files, not ${untracked}`);
    // The frame's JSON (on the wire it is deflated; a repeat of the same list compresses to almost nothing).
    const jsonBytes = Buffer.byteLength(JSON.stringify(snapshot));
    const [oursList, bareListStat, twiceStat, hardenedStat, readerStat] = await alternate([
      list,
      bareList,
      bareListTwice,
      hardenedList,
      reader,
    ]);
    const label = `${modified} modified + ${untracked} untracked`;
    rows.push(
      row(
        `changes.list, ${label}`,
        oursList!,
        bareListStat!,
        `${snapshot.truncated ? `truncated to ${files.length} (LIMITS.changesFiles)` : `${files.length} files`}, ${(jsonBytes / 1024).toFixed(1)} KiB of JSON`,
      ),
      row(
        "  bare, each after a config --get-regexp",
        twiceStat!,
        bareListStat!,
        "the runner's double spawn, bare",
      ),
      row("  the two commands through GitRunner.run", hardenedStat!, bareListStat!, "hardened, no parsing"),
      row(
        "  listChanges in-process",
        readerStat!,
        bareListStat!,
        "hardened runner + parse + untracked counts",
      ),
    );

    // One modified file's patch: the first one, as a client would tap it.
    const file = files.find((f) => f.status === "modified")!;
    const diff = () =>
      client.request(
        { type: "changes.diff", conversation_id: conversation, file_id: file.file_id },
        "changes.file",
      );
    const patch = (await diff()).patch as string;
    const bareDiffOne = () => bare(["diff", base, "--", file.path]);
    if (
      (await bareDiffOne()).length === 0 ||
      !patch.includes(`changed${file.path.replace(/.*file(\d+)\.ts$/, "$1")}`)
    )
      throw new Error(`no patch for ${file.path}`);
    // What changes.diff runs, bare: the paths alone (to check the file ID is still one of the changes),
    // that one file's counts (binary or not), then the diff.
    const bareLookupThenDiff = async () => {
      await Promise.all([
        bare(["diff", base, "--raw", "-z", "-M"]),
        bare(["ls-files", "--others", "--exclude-standard", "-z"]),
      ]);
      await bare(["diff", base, "--raw", "--numstat", "-z", "-M", "--", file.path]);
      await bareDiffOne();
    };
    const [oursDiff, bareDiffStat, bareBoth] = await alternate([diff, bareDiffOne, bareLookupThenDiff]);
    rows.push(row(`changes.diff of one file, ${label}`, oursDiff!, bareDiffStat!, `${patch.length} B patch`));
    rows.push(
      row(
        "  same, against bare lookup + diff",
        oursDiff!,
        bareBoth!,
        "what changes.diff runs (paths to check the file ID, its counts, the diff)",
      ),
    );
  }

  // The hardened runner's per-command cost, in this process (no server, no socket).
  process.stderr.write(`changes: GitRunner.run vs bare git, ${RUNS} runs each\n`);
  const hardened = () => runner.run(["rev-parse", "HEAD"], { cwd: repo });
  if ((await hardened()).stdout.toString().trim() !== base)
    throw new Error("GitRunner.run gave another HEAD");
  const bareRevParse = () => bare(["rev-parse", "HEAD"]);
  const bareTwo = async () => {
    await bareConfig();
    await bare(["rev-parse", "HEAD"]);
  };
  const [oursRev, bareRev, bareTwoStat] = await alternate([hardened, bareRevParse, bareTwo]);
  rows.push(
    row(
      "GitRunner.run rev-parse HEAD",
      oursRev!,
      bareRev!,
      "hardened: config --get-regexp, then the command",
    ),
  );
  rows.push(
    row("  same, against bare config + rev-parse", oursRev!, bareTwoStat!, "the runner's two spawns, bare"),
  );

  console.log(
    `\n## Changes review: ${TRACKED.toLocaleString("en")} tracked files of ${LINES} lines; median and p95 of ${RUNS} runs (after ${WARMUP} warm-ups)\n`,
  );
  console.log(
    "baseline: the same git commands run bare from the bench process (child_process.execFile), same repository, same run\n",
  );
  table(rows);
  client.close();
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
