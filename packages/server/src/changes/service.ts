/**
 * The `changes` extension's server side: a conversation's base commit, `changes.list` and
 * `changes.diff`, and `changes.changed` at the end of a run whose changes moved.
 *
 * Git runs only through the hardened runner, at the conversation's path base (the top of the git work
 * tree holding its working directory); every path a client sees is relative to it. A working
 * directory outside any git repository is `not_implemented`; git not answering in time is
 * `internal_error` "git did not answer in time".
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type ChangedFile, type ChangesBase, LIMITS } from "@pheby/protocol";
import type { Logger } from "pino";
import { cutBytes } from "../activity/diff.js";
import { pathBaseOf } from "../activity/path-base.js";
import type { AgentRegistry } from "../agents/registry.js";
import { conversationNotFound, ProtocolError } from "../errors.js";
import { GitTimeoutError } from "../git/errors.js";
import type { GitRunner } from "../git/runner.js";
import type { Outbox } from "../outbox/outbox.js";
import type { Store } from "../store/store.js";
import {
  type Change,
  type ChangeList,
  findChange,
  fingerprintOf,
  headCommit,
  listChanges,
  patchOf,
} from "./reader.js";
import { redactPatch } from "./redact-patch.js";
import { conversationWorkdir } from "./workdir.js";

/** A run's changes as its finished-run push names them (" · N files +A −D"). */
export interface ChangesSummary {
  files: number;
  additions: number;
  deletions: number;
}

/** What {@link Changes} needs. */
export interface ChangesDeps {
  store: Store;
  git: GitRunner;
  agents: AgentRegistry;
  outbox: Outbox;
  log: Logger;
  /** The server's own directories out of patch text (a symlink's target, a path in a file). */
  scrub: (text: string) => string;
}

/** The reply fields of `changes.snapshot`. */
export interface ChangesSnapshotBody {
  base: ChangesBase;
  files: ChangedFile[];
  truncated: boolean;
}

/** The reply fields of `changes.file`. */
export interface ChangesFileBody {
  file_id: string;
  path: string;
  patch: string | null;
  truncated: boolean;
}

/** The run end the changes look at (the engine's `finished` run event). */
export interface ChangesRunEnd {
  conversationId: string;
  runId: string;
  shutdown: boolean;
}

/** See the module comment. */
export class Changes {
  /**
   * Each conversation's git work, one at a time and in order: a run's measurement, then the requests
   * that came after it (a `changes.list` sent after `run.finished` sees that run's measurement done).
   */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ChangesDeps) {}

  /** Run `work` after the conversation's earlier git work. */
  #serial<T>(conversationId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(conversationId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const settled = next.catch(() => undefined);
    this.#queues.set(conversationId, settled);
    void settled.then(() => {
      if (this.#queues.get(conversationId) === settled) this.#queues.delete(conversationId);
    });
    return next;
  }

  /** The conversation's path base when its working directory is in a git work tree, else null. */
  repositoryOf(conversationId: string): string | null {
    const conversation = this.deps.store.getConversation(conversationId);
    if (!conversation) return null;
    const workdir = conversationWorkdir(this.deps.agents, conversation);
    // A directory not made yet (the simulator's repository before `/sim changes`) is in no repository,
    // whatever holds the place it would be in.
    if (workdir === undefined || !existsSync(workdir)) return null;
    const base = pathBaseOf(workdir);
    return existsSync(join(base, ".git")) ? base : null;
  }

  /**
   * Record a new conversation's base: HEAD's commit now. Outside a repository, or before its first
   * commit, nothing is recorded (its first `changes.list` records one). Never throws.
   */
  async recordBase(conversationId: string): Promise<void> {
    try {
      const repo = this.repositoryOf(conversationId);
      if (!repo) return;
      const head = await headCommit(this.deps.git, repo);
      if (head) this.deps.store.changes.setBase(conversationId, head);
    } catch (err) {
      this.deps.log.warn(
        { err: errorSummary(err), conversation: conversationId },
        "could not record the changes base",
      );
    }
  }

  /** `changes.list`: the files that differ from the base, at most {@link LIMITS}.changesFiles. */
  snapshot(conversationId: string): Promise<ChangesSnapshotBody> {
    return this.#serial(conversationId, () => this.#snapshot(conversationId));
  }

  async #snapshot(conversationId: string): Promise<ChangesSnapshotBody> {
    const { repo, base } = await this.#open(conversationId);
    const list = await this.#git(() => listChanges(this.deps.git, repo, base));
    const files = list.changes.slice(0, LIMITS.changesFiles).map(wire);
    return {
      base: { commit: base, label: base.slice(0, 7) },
      files,
      truncated: list.changes.length > files.length,
    };
  }

  /** `changes.diff`: one listed file's patch; `not_found` when no changed file has that ID (any more). */
  file(conversationId: string, fileId: string): Promise<ChangesFileBody> {
    return this.#serial(conversationId, () => this.#file(conversationId, fileId));
  }

  async #file(conversationId: string, fileId: string): Promise<ChangesFileBody> {
    const { repo, base } = await this.#open(conversationId);
    // Found from the paths alone, not a whole list: the same IDs, valid while the file differs from base.
    const change = await this.#git(() => findChange(this.deps.git, repo, base, fileId));
    if (!change) throw new ProtocolError("not_found", "No such changed file in this conversation");
    const { patch, truncated } = await this.#git(() =>
      patchOf(this.deps.git, repo, base, change, LIMITS.changesPatchBytes),
    );
    if (patch === null) return { file_id: fileId, path: change.path, patch, truncated };
    // Scrubbing and redaction can lengthen the text (a short directory becomes `<data>`, `A=1` becomes
    // `A=[REDACTED]`): the cut comes after both, so the bound holds exactly. Redacting git's already
    // bounded output is safe: it was cut at a line end, and a secret spanning lines (a PEM key) whose
    // end was cut off is redacted to the end of the text.
    const paths = change.old_path === undefined ? [change.path] : [change.path, change.old_path];
    const redacted = redactPatch(this.deps.scrub(patch), paths);
    const cut = cutBytes(redacted, LIMITS.changesPatchBytes);
    return { file_id: fileId, path: change.path, patch: cut.text, truncated: truncated || cut.truncated };
  }

  /**
   * A run ended: when its conversation's changes moved since the last run's end, `changes.changed`
   * goes out (to `changes` connections; logged for `resume`). `done` gets the summary for the push
   * (or undefined) — synchronously when the conversation is not in a git repository, so the push is
   * not delayed there.
   */
  afterRun(run: ChangesRunEnd, done: (summary: ChangesSummary | undefined) => void): void {
    const repo = run.shutdown ? null : this.repositoryOf(run.conversationId);
    if (!repo) {
      done(undefined);
      return;
    }
    this.#serial(run.conversationId, () => this.#measure(run, repo)).then(done, (err: unknown) => {
      this.deps.log.warn({ err: errorSummary(err), run: run.runId }, "could not measure a run's changes");
      done(undefined);
    });
  }

  async #measure(run: ChangesRunEnd, repo: string): Promise<ChangesSummary | undefined> {
    const base = await this.#baseOf(run.conversationId, repo);
    if (!base) return undefined;
    const list = await listChanges(this.deps.git, repo, base);
    const fingerprint = await fingerprintOf(repo, list);
    const previous =
      this.deps.store.changes.fingerprint(run.conversationId) ?? (await emptyFingerprint(repo));
    if (fingerprint === previous) return undefined;
    if (!this.deps.store.getConversation(run.conversationId)) return undefined; // deleted meanwhile
    this.deps.store.changes.setFingerprint(run.conversationId, fingerprint);
    const summary = summaryOf(list);
    this.deps.outbox.publish({
      message: {
        type: "changes.changed",
        conversation_id: run.conversationId,
        run_id: run.runId,
        file_count: summary.files,
        additions: summary.additions,
        deletions: summary.deletions,
      },
      conversationId: run.conversationId,
    });
    return summary;
  }

  /** The repository and base of a conversation the requester may read, or the protocol's error. */
  async #open(conversationId: string): Promise<{ repo: string; base: string }> {
    if (!this.deps.store.getConversation(conversationId)) throw conversationNotFound();
    const repo = this.repositoryOf(conversationId);
    if (!repo)
      throw new ProtocolError(
        "not_implemented",
        "This conversation's working directory is not in a git repository",
      );
    const base = await this.#git(() => this.#baseOf(conversationId, repo));
    if (!base)
      throw new ProtocolError("not_implemented", "This conversation's git repository has no commit yet");
    return { repo, base };
  }

  /** The recorded base, or HEAD now (recorded) for a conversation that has none yet. */
  async #baseOf(conversationId: string, repo: string): Promise<string | null> {
    const recorded = this.deps.store.changes.base(conversationId);
    if (recorded) return recorded;
    const head = await headCommit(this.deps.git, repo);
    return head ? this.deps.store.changes.setBase(conversationId, head) : null;
  }

  /** Git's failures as the protocol's errors (no stderr: it names server paths). */
  async #git<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      if (err instanceof GitTimeoutError)
        throw new ProtocolError("internal_error", "git did not answer in time");
      this.deps.log.error({ err: errorSummary(err) }, "git failed");
      throw new ProtocolError("internal_error", "git failed");
    }
  }
}

/** The files and totals of a list (all of it, also past what one snapshot shows). */
export function summaryOf(list: ChangeList): ChangesSummary {
  return { files: list.changes.length, additions: list.additions, deletions: list.deletions };
}

/** A change as the wire carries it. */
function wire(change: Change): ChangedFile {
  const { raw: _raw, untracked: _untracked, ...file } = change;
  return file;
}

/** What a run that changed nothing against the base is compared with before any run was measured. */
async function emptyFingerprint(repo: string): Promise<string> {
  return fingerprintOf(repo, { changes: [], additions: 0, deletions: 0 });
}

/** An error's name and message only (a git error's stderr can be long). */
function errorSummary(err: unknown): { name?: string; message: string } {
  return err instanceof Error ? { name: err.name, message: err.message } : { message: String(err) };
}
