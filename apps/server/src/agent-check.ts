// Catch a broken ACP agent setup before serving: a missing executable or working directory would
// otherwise surface only at the first chat, as a failed run the operator never sees.
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Why the agent `argv` cannot be spawned in `cwd` with `PATH` from `env`, or null when it can.
 * A command with a slash is taken as a path (relative to `cwd`, as `spawn` does); a bare name is
 * looked up on `PATH`, as `spawn` does.
 */
export function agentCommandProblem(argv: string[], cwd: string, env: NodeJS.ProcessEnv): string | null {
  try {
    if (!statSync(cwd).isDirectory()) return `the agent's working directory ${cwd} is not a directory`;
  } catch {
    return `the agent's working directory ${cwd} does not exist`;
  }
  const [file] = argv;
  if (!file) return "no agent command is configured";
  if (file.includes("/")) {
    const path = isAbsolute(file) ? file : resolve(cwd, file);
    return isExecutableFile(path) ? null : `the agent command ${path} does not exist or is not executable`;
  }
  const dirs = (env.PATH ?? "").split(delimiter).filter(Boolean);
  return dirs.some((dir) => isExecutableFile(join(dir, file)))
    ? null
    : `the agent command "${file}" was not found on PATH (${dirs.join(delimiter)})`;
}
