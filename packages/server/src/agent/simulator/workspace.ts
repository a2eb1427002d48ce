/**
 * The simulator's own git repository, for `/sim changes`: the simulator never writes into a
 * configured workspace, only here, under Pheby's data directory. It is also the simulator's working
 * directory (`AgentBackend.workdir`), so the `changes` extension lists what `/sim changes` did.
 * Made on first use, with an initial commit, through the hardened git runner.
 */
import { existsSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { GitRunner } from "../../git/runner.js";

/** The repository's directory name under the data directory. */
export const SIM_WORKSPACE_DIR = "simulator-workspace";

/** The files of the repository's initial commit. */
export const SIM_WORKSPACE_FILES: Readonly<Record<string, string>> = {
  "README.md": "# Simulator workspace\n\nA repository of Pheby's simulator: `/sim changes` edits it.\n",
  "src/app.ts": 'export const name = "pheby-sim";\n\nexport function main() {\n  return name;\n}\n',
  "docs/old-notes.md": "Notes that /sim changes deletes.\n",
};

/**
 * What `/sim changes` does to the work tree (the same every time, so a second run changes nothing):
 * modifies `src/app.ts` (+2 −1), creates `src/feature.ts` (3 lines, untracked) and deletes
 * `docs/old-notes.md` (−1).
 */
export const SIM_CHANGES = {
  modified: {
    path: "src/app.ts",
    text: 'export const name = "pheby-sim";\nexport const version = 2;\n\nexport function main() {\n  return name + " v" + version;\n}\n',
  },
  created: { path: "src/feature.ts", text: "export function feature() {\n  return true;\n}\n" },
  deleted: { path: "docs/old-notes.md" },
} as const;

/**
 * Make the repository (once): the initial files, committed, built beside `dir` and renamed into place
 * so that a repository at `dir` always has its commit. Callers serialise calls. Returns `dir`.
 */
export async function ensureSimWorkspace(dir: string, git: GitRunner): Promise<string> {
  if (existsSync(join(dir, ".git"))) return dir;
  const building = `${dir}.building`;
  await rm(building, { recursive: true, force: true }); // left by an interrupted first use
  await mkdir(building, { recursive: true, mode: 0o700 });
  for (const [path, text] of Object.entries(SIM_WORKSPACE_FILES)) {
    await mkdir(dirname(join(building, path)), { recursive: true });
    await writeFile(join(building, path), text);
  }
  await git.run(["init", "-q", "-b", "main"], { cwd: building });
  await git.run(["add", "-A"], { cwd: building });
  await git.run(["commit", "-q", "-m", "Simulator workspace"], {
    cwd: building,
    identity: { name: "Pheby simulator", email: "simulator@pheby.invalid" },
  });
  await rm(dir, { recursive: true, force: true });
  await rename(building, dir);
  return dir;
}

/** Apply {@link SIM_CHANGES} to the work tree. */
export async function applySimChanges(dir: string): Promise<void> {
  const { modified, created, deleted } = SIM_CHANGES;
  await writeFile(join(dir, modified.path), modified.text);
  await writeFile(join(dir, created.path), created.text);
  await rm(join(dir, deleted.path), { force: true });
}
