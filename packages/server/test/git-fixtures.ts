/**
 * Real git repositories in temp dirs for the git runner's and the changes extension's tests, made with
 * plain git (never the runner under test), and a repository whose config tries every way git has to
 * run a command: each writes a marker file if it runs.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh directory with symlinks resolved. */
export const tempDir = (prefix = "pheby-git-") => realpathSync(mkdtempSync(join(tmpdir(), prefix)));

/** Plain git for setting fixtures up, isolated from the machine's config. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "T",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "T",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  });
}

/** A repository with `files` committed (path → content). */
export function repoWith(files: Record<string, string | Buffer>): string {
  const dir = tempDir();
  git(dir, "init", "-q", "-b", "main");
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "initial", "--allow-empty");
  return dir;
}

/** Hooks the repository names, every one of them a marker writer. */
const HOOKS = [
  "post-checkout",
  "pre-commit",
  "prepare-commit-msg",
  "commit-msg",
  "post-commit",
  "post-index-change",
  "reference-transaction",
  "pre-auto-gc",
  "fsmonitor-watchman",
];

/** A repository armed with malicious config; `markers` lists what ran. */
export interface MaliciousRepo {
  dir: string;
  /** The names of the markers written so far (each trap writes `<name>` when it runs). */
  markers(): string[];
  /** Where the markers go. */
  markerDir: string;
}

/**
 * A repository whose config sets hooks (in .git/hooks and in a `core.hooksPath` of its own),
 * `core.fsmonitor`, `diff.external`, a diff driver's `command` and `textconv`, clean/smudge/process
 * filters (required, one defined only in an included file), `core.pager` and `gpg.program` with
 * `log.showSignature`: each a script that writes a marker file and passes its input through.
 */
export function maliciousRepo(): MaliciousRepo {
  const dir = repoWith({ "a.txt": "one\ntwo\n", "b.md": "# b\n", "sub/c.txt": "c\n", "plain.js": "plain\n" });
  const markerDir = tempDir("pheby-markers-");
  const trapDir = tempDir("pheby-traps-");
  const trap = (name: string, body = "cat") => {
    const file = join(trapDir, name);
    writeFileSync(file, `#!/bin/sh\ntouch '${join(markerDir, name)}'\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  // Attributes first (committed), then the config that makes them bite.
  writeFileSync(
    join(dir, ".gitattributes"),
    "*.txt filter=evil diff=evil\n*.md filter=inc\n*.bin filter=proc\n",
  );
  git(dir, "add", ".gitattributes");
  git(dir, "commit", "-q", "-m", "attributes");
  const hooksDir = join(dir, ".git", "hooks");
  const ownHooks = join(trapDir, "hooks");
  mkdirSync(ownHooks);
  for (const hook of HOOKS) {
    writeFileSync(join(hooksDir, hook), `#!/bin/sh\ntouch '${join(markerDir, `hook-${hook}`)}'\n`);
    chmodSync(join(hooksDir, hook), 0o755);
    writeFileSync(join(ownHooks, hook), `#!/bin/sh\ntouch '${join(markerDir, `hookspath-${hook}`)}'\n`);
    chmodSync(join(ownHooks, hook), 0o755);
  }
  const set = (key: string, value: string) => git(dir, "config", key, value);
  set("core.hooksPath", ownHooks);
  set("core.fsmonitor", trap("fsmonitor", "exit 0"));
  set("diff.external", trap("diff-external", "exit 0"));
  set("diff.evil.command", trap("diff-driver-command", "exit 0"));
  set("diff.evil.textconv", trap("textconv"));
  set("filter.evil.clean", trap("filter-clean"));
  set("filter.evil.smudge", trap("filter-smudge"));
  set("filter.evil.required", "true");
  set("filter.proc.process", trap("filter-process", "exit 1"));
  set("core.pager", trap("pager"));
  set("gpg.program", trap("gpg", "exit 1"));
  set("log.showSignature", "true");
  const included = join(trapDir, "included.cfg");
  writeFileSync(included, `[filter "inc"]\n\tclean = ${trap("included-filter-clean")}\n\trequired = true\n`);
  set("include.path", included);
  const markers = () => (existsSync(markerDir) ? readdirSync(markerDir).sort() : []);
  return { dir, markers, markerDir };
}
