/**
 * The wire shapes of the `changes` extension as this module builds them. Written against the decided
 * design before `protocol(changes)` landed; structurally identical to @pheby/protocol's types.
 */

/** How a file differs from the base (git's A, M, D, R, T; untracked files are "added"). */
export type ChangeStatus = "added" | "modified" | "deleted" | "renamed" | "type_changed";

/** What the path is (in the working tree; in the base when deleted). */
export type ChangedFileType = "file" | "symlink" | "submodule";

/** One file of `changes.snapshot`. */
export interface ChangedFile {
  file_id: string;
  path: string;
  old_path?: string;
  status: ChangeStatus;
  type: ChangedFileType;
  additions: number;
  deletions: number;
  binary: boolean;
}

/** `changes.snapshot`'s base. */
export interface ChangesBase {
  commit: string;
  label: string;
}
