/**
 * `/sim where`: where a conversation runs, as the `workspaces` extension places it, so a client
 * developer sees placement work with no LLM. The working directory is told relative to the path base
 * (docs/security.md): no server path is ever part of the answer.
 */
import { existsSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { pathBaseOf, realOrGiven } from "../../activity/path-base.js";
import type { TurnInput } from "../port.js";

/** The reply of `/sim where` for a turn (its placement and working directory). */
export function whereText(input: Pick<TurnInput, "cwd" | "placement">): string {
  const { placement, cwd } = input;
  if (!placement) return "I cannot tell where this conversation runs: the server did not say.";
  const branch = placement.branch
    ? `on branch ${placement.branch} of its own worktree`
    : "on no branch of its own (no worktree)";
  return `This conversation runs with agent ${placement.agentId} in workspace ${placement.workspaceId}, ${branch}, ${directory(cwd)}.`;
}

/** The working directory relative to its path base, and whether that base is a git working tree. */
function directory(cwd: string | undefined): string {
  if (!cwd) return "in the agent's own directory";
  const base = pathBaseOf(cwd);
  const rel = relative(base, realOrGiven(cwd)).split(sep).join("/") || ".";
  return existsSync(join(base, ".git"))
    ? `in the directory ${rel} of its git working tree`
    : `in the directory ${rel} of its workspace (not a git repository)`;
}
