/**
 * How the runner defuses a repository it does not trust: the environment and the command-scope
 * configuration of every git call, and the diff options that keep git from running drivers.
 *
 * The repository's config, hooks, attributes and files may have been written by the agent (which may
 * run as another OS user) or come with a cloned project, and git runs commands named in several of
 * those places. None may run as Pheby.
 */

/**
 * Configuration given to every call in command scope, above the repository's own (as `-c` would).
 * Passed as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` (git ≥ 2.31): no `key=value`
 * parsing (a filter driver's name may hold `=`), and the git children git itself starts inherit it.
 */
export const HARDENED_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["core.hooksPath", "/dev/null"], // no hooks (post-checkout of `worktree add`, pre-commit…)
  ["core.fsmonitor", "false"], // no fsmonitor hook or daemon
  ["core.attributesFile", "/dev/null"], // no global attributes (the repo's are neutralised below)
  ["core.pager", "cat"],
  ["log.showSignature", "false"], // no gpg
  ["commit.gpgSign", "false"],
  ["tag.gpgSign", "false"],
  ["gc.auto", "0"], // no background gc or maintenance spawned after a command
  ["maintenance.auto", "false"],
  ["submodule.recurse", "false"], // a submodule's own config is not ours to defuse: never enter one
  ["diff.ignoreSubmodules", "dirty"],
  ["status.submoduleSummary", "false"],
  ["color.ui", "false"],
];

/** The parts of a filter driver, each emptied so that no clean/smudge/process command runs. */
const FILTER_OFF: ReadonlyArray<readonly [string, string]> = [
  ["clean", ""],
  ["smudge", ""],
  ["process", ""],
  // A required filter that does not run is an error; an emptied one must not be.
  ["required", "false"],
];

/**
 * Subcommands that may run diff drivers: each gets `--no-ext-diff --no-textconv` (no `diff.external`,
 * no `diff.<driver>.command`, no textconv) and `--ignore-submodules=dirty` (no git started inside a
 * submodule).
 */
const DIFF_LIKE = new Set(["diff", "log", "show"]);

/** Subcommands that look at submodules' work trees unless told not to. */
const SUBMODULE_AWARE = new Set(["diff", "status"]);

/**
 * The filter driver names the repository's config defines, from the NUL-separated output of
 * `git config --null --name-only --get-regexp ^filter\.` (keys `filter.<name>.<var>`).
 */
export function filterDriverNames(output: string): string[] {
  const names = new Set<string>();
  for (const key of output.split("\0")) {
    const last = key.lastIndexOf(".");
    if (key.startsWith("filter.") && last > "filter.".length) names.add(key.slice("filter.".length, last));
  }
  return [...names];
}

/** Command-scope config that disables each named filter driver. */
export function filtersOff(names: readonly string[]): Array<readonly [string, string]> {
  return names.flatMap((name) =>
    FILTER_OFF.map(([part, value]) => [`filter.${name}.${part}`, value] as const),
  );
}

/**
 * The environment of a git call, built from scratch: nothing of Pheby's own environment reaches git
 * (an inherited `GIT_DIR`, `GIT_EXTERNAL_DIFF`, `GIT_SSH_COMMAND`…), only `PATH`.
 */
export function hardenedEnv(opts: {
  path: string;
  /** An empty directory: HOME and XDG_CONFIG_HOME, so no per-user git file is found. */
  emptyHome: string;
  /** The one directory git may trust although another user owns it. */
  safeDirectory: string;
  /** Extra command-scope config (the repository's filters, switched off). */
  config: ReadonlyArray<readonly [string, string]>;
}): NodeJS.ProcessEnv {
  const config = [...HARDENED_CONFIG, ["safe.directory", opts.safeDirectory] as const, ...opts.config];
  const env: NodeJS.ProcessEnv = {
    PATH: opts.path,
    HOME: opts.emptyHome,
    XDG_CONFIG_HOME: opts.emptyHome,
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0", // read-only commands (status, diff) do not rewrite the index under the agent
    GIT_PAGER: "cat",
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** The argv after `git`: the subcommand's own switches that keep drivers and submodules out, then the caller's. */
export function hardenedArgs(args: readonly string[]): string[] {
  const [command, ...rest] = args;
  if (command === undefined) throw new Error("git: no subcommand");
  if (command.startsWith("-")) throw new Error("git: the first argument must be the subcommand");
  const extra: string[] = [];
  if (DIFF_LIKE.has(command)) extra.push("--no-ext-diff", "--no-textconv", "--no-color");
  if (SUBMODULE_AWARE.has(command)) extra.push("--ignore-submodules=dirty");
  return ["--no-pager", command, ...extra, ...rest];
}
