/**
 * The allowed file roots: the directories an agent may deliver files from.
 * This is the one place they are resolved (real paths, once) and checked, for
 * the ACP backend (which refuses a `MEDIA:` line or a link outside them) and
 * for the attachment store (which copies only from inside them).
 */
import { constants, realpathSync } from "node:fs";
import { type FileHandle, open, realpath } from "node:fs/promises";
import { isAbsolute, sep } from "node:path";

export class FileRoots {
  readonly #roots: string[] = [];
  readonly #except: string[] = [];

  /**
   * Resolve each root's real path now (symlinks followed), so a root that is
   * itself a link is compared by its target. A root that does not exist is
   * reported through `onMissing` and ignored. Nothing inside `except` qualifies, whatever root
   * holds it: the server's data directory (its secret, database, keys) stays out even when a
   * workspace (an allowed root) contains it.
   */
  constructor(
    roots: readonly string[],
    onMissing: (root: string) => void = () => {},
    except: readonly string[] = [],
  ) {
    for (const root of roots) {
      try {
        this.#roots.push(realpathSync(root));
      } catch {
        onMissing(root);
      }
    }
    for (const dir of except) {
      try {
        this.#except.push(realpathSync(dir));
      } catch {
        // Not there: nothing inside it to keep out.
      }
    }
  }

  /**
   * The real path of `path` when it lies strictly inside one of the roots
   * (`root + "/"` prefix, after resolving every symlink), else null. Only
   * absolute paths qualify: a relative one would depend on the process's cwd.
   */
  async resolve(path: string): Promise<string | null> {
    if (typeof path !== "string" || !isAbsolute(path)) return null;
    let real: string;
    try {
      real = await realpath(path);
    } catch {
      return null;
    }
    const within = (dir: string) => real.startsWith(dir.endsWith(sep) ? dir : dir + sep);
    const inside = this.#roots.some(within) && !this.#except.some((dir) => real === dir || within(dir));
    return inside ? real : null;
  }

  /**
   * Open `path` for reading when it lies inside a root and is a regular file; else why not.
   * `O_NOFOLLOW`: the resolved path must not have become a symlink since it was checked.
   * `O_NONBLOCK`: a FIFO (or a device) opens at once instead of blocking a libuv worker until
   * a writer appears; `fstat` on the opened handle then refuses it, with no window for a swap.
   */
  async open(path: string): Promise<FileHandle | "outside" | "unreadable" | "not_regular"> {
    const real = await this.resolve(path);
    if (real === null) return "outside";
    let handle: FileHandle;
    try {
      handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      return "unreadable";
    }
    try {
      if ((await handle.stat()).isFile()) return handle;
    } catch {
      // falls through: unreadable metadata is no regular file
    }
    await handle.close().catch(() => {});
    return "not_regular";
  }
}
