/**
 * The one hardened git runner: every git command Pheby runs goes through {@link GitRunner.run}.
 *
 * Each call runs `git` from an argv array (no shell) with the environment and command-scope config of
 * `hardening.ts` (no system or global config, no hooks, no fsmonitor, no external diff or textconv,
 * no filters, `safe.directory` for the repository's own top directory only), a timeout that kills
 * the child and its group ({@link GitTimeoutError}), and a bounded stdout (the rest is dropped and
 * `truncated` set).
 *
 * Filters: git has no switch that turns every clean/smudge/process filter off, and before git 2.40
 * the work tree's `.gitattributes` cannot be ignored, so the runner reads the filter drivers the
 * repository's config defines (`git config --get-regexp`, which runs nothing) right before each
 * command and empties each of them in command scope. A driver could only slip through if it were
 * added to the config between those two calls; the commands Pheby runs against a work tree are
 * read-only (status, diff, ls-files) apart from `worktree add` (a checkout).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathBaseOf } from "../activity/path-base.js";
import { GitFailedError, GitTimeoutError } from "./errors.js";
import { filterDriverNames, filtersOff, hardenedArgs, hardenedEnv } from "./hardening.js";

/** Defaults of {@link GitRunnerOptions}. */
export const GIT_DEFAULTS = {
  timeoutMs: 15_000,
  maxStdoutBytes: 16 * 1024 * 1024,
  maxStderrBytes: 16 * 1024,
} as const;

/** How a {@link GitRunner} runs git. */
export interface GitRunnerOptions {
  /** The git executable (looked up on `path`). Default `git`. */
  command?: string;
  /** `PATH` git is started with. Default: this process's. */
  path?: string;
  /** Kill git after this long. Default {@link GIT_DEFAULTS}.timeoutMs. */
  timeoutMs?: number;
  /** Keep at most this much of stdout. Default {@link GIT_DEFAULTS}.maxStdoutBytes. */
  maxStdoutBytes?: number;
}

/** One call. */
export interface GitRunOptions {
  /** Where git runs: the repository's work tree (its top or a folder of it), or any directory for `init`/`--no-index`. */
  cwd: string;
  /** Exit codes that are not failures (`diff --no-index` exits 1 when the files differ). Default `[0]`. */
  okCodes?: readonly number[];
  /** Keep at most this much of stdout (then kill git and set `truncated`). Default: the runner's. */
  maxStdoutBytes?: number;
  /** Default: the runner's. */
  timeoutMs?: number;
  /** Author and committer of a commit git makes (none is read from any config). */
  identity?: { name: string; email: string };
}

/** What a call returned. */
export interface GitResult {
  stdout: Buffer;
  /** stdout went past the limit: `stdout` is its start and git was stopped. */
  truncated: boolean;
  /** Git's exit code (null when it was stopped because its output was too long). */
  code: number | null;
  /** Bounded; may name server paths: never for a client. */
  stderr: string;
}

let emptyHome: string | undefined;

/** An empty directory for HOME, made once per process and removed at exit. */
function theEmptyHome(): string {
  if (emptyHome === undefined) {
    const dir = mkdtempSync(join(tmpdir(), "pheby-git-home-"));
    emptyHome = dir;
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  return emptyHome;
}

/** Runs git hardened against the repository it looks at (see the module comment). */
export class GitRunner {
  readonly #command: string;
  readonly #path: string;
  readonly #timeoutMs: number;
  readonly #maxStdout: number;

  constructor(options: GitRunnerOptions = {}) {
    this.#command = options.command ?? "git";
    this.#path = options.path ?? process.env.PATH ?? "/usr/bin:/bin";
    this.#timeoutMs = options.timeoutMs ?? GIT_DEFAULTS.timeoutMs;
    this.#maxStdout = options.maxStdoutBytes ?? GIT_DEFAULTS.maxStdoutBytes;
  }

  /**
   * Run `git <args>` in `options.cwd`. `args[0]` is the subcommand; never pass `-c` or `--exec-path`.
   * @throws GitTimeoutError when git did not finish in time (it was killed).
   * @throws GitFailedError when git exited with a code not in `okCodes`, or could not be started.
   */
  async run(args: readonly string[], options: GitRunOptions): Promise<GitResult> {
    const safeDirectory = pathBaseOf(options.cwd);
    const filters = args[0] === "config" ? [] : await this.#filterNames(options, safeDirectory);
    return this.#spawn(args, options, safeDirectory, filtersOff(filters));
  }

  /** The filter drivers the repository's config (and what it includes) defines; none outside a repository. */
  async #filterNames(options: GitRunOptions, safeDirectory: string): Promise<string[]> {
    const read = await this.#spawn(
      ["config", "--null", "--name-only", "--get-regexp", "^filter\\."],
      { cwd: options.cwd, okCodes: [0, 1], timeoutMs: options.timeoutMs },
      safeDirectory,
      [],
    );
    if (read.truncated) throw new GitFailedError(["config"], read.code, "too many filter keys");
    return filterDriverNames(read.stdout.toString("utf8"));
  }

  #spawn(
    args: readonly string[],
    options: GitRunOptions,
    safeDirectory: string,
    config: ReadonlyArray<readonly [string, string]>,
  ): Promise<GitResult> {
    const argv = hardenedArgs(args);
    const env = hardenedEnv({ path: this.#path, emptyHome: theEmptyHome(), safeDirectory, config });
    if (options.identity) {
      env.GIT_AUTHOR_NAME = env.GIT_COMMITTER_NAME = options.identity.name;
      env.GIT_AUTHOR_EMAIL = env.GIT_COMMITTER_EMAIL = options.identity.email;
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const maxStdout = options.maxStdoutBytes ?? this.#maxStdout;
    const okCodes = options.okCodes ?? [0];
    return new Promise((resolve, reject) => {
      // Its own process group, so that a timeout kills whatever git started too.
      const child = spawn(this.#command, argv, {
        cwd: options.cwd,
        env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        shell: false,
      });
      const out: Buffer[] = [];
      let outBytes = 0;
      let truncated = false;
      let err = "";
      let timedOut = false;
      const killGroup = () => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, timeoutMs);
      child.stdout.on("data", (chunk: Buffer) => {
        if (truncated) return;
        const room = maxStdout - outBytes;
        if (chunk.length > room) {
          out.push(chunk.subarray(0, room));
          outBytes = maxStdout;
          truncated = true;
          killGroup();
          return;
        }
        out.push(chunk);
        outBytes += chunk.length;
      });
      child.stderr.on("data", (chunk: Buffer) => {
        if (err.length < GIT_DEFAULTS.maxStderrBytes)
          err += chunk.toString("utf8").slice(0, GIT_DEFAULTS.maxStderrBytes);
      });
      child.on("error", (error) => {
        clearTimeout(timer);
        reject(new GitFailedError(args, null, error.message));
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        if (timedOut) return reject(new GitTimeoutError(args, timeoutMs));
        if (!truncated && (code === null || !okCodes.includes(code)))
          return reject(new GitFailedError(args, code, err));
        resolve({ stdout: Buffer.concat(out), truncated, code: truncated ? null : code, stderr: err });
      });
    });
  }
}
