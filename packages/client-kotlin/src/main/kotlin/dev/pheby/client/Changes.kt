package dev.pheby.client

// The `changes` extension (docs/protocol.md, "Extension: review the changes"): what a conversation changed in its
// workspace, file by file, for a review before merging or asking for more. Asked for by default (as in
// @pheby/client). Read-only: staging, committing or reverting is something to ask the agent for. Files
// are addressed by the `fileId`s the server hands out, never by a path the client names; every `path` is
// relative to the conversation's path base (the root of its git working tree). At the end of a run that
// changed the list, `changes.changed` (totals) arrives on PhebyClient.events: it carries `seq` on a
// `resume` connection and is replayed like a run's frames. Without the feature the server answers these
// requests `unknown_type`.

import dev.pheby.protocol.ChangesChanged
import dev.pheby.protocol.ChangesDiff
import dev.pheby.protocol.ChangesFile
import dev.pheby.protocol.ChangesList
import dev.pheby.protocol.ChangesSnapshot
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.filter
import kotlinx.coroutines.flow.filterIsInstance

/**
 * `changes.list`: every file of [conversationId]'s working tree that differs from its `base` (the commit
 * that was `HEAD` when the conversation was created, or a worktree's branch point: `commit` and a short
 * `label`), untracked files included and ignored ones not: each `fileId`, `path`, `oldPath` (renames
 * only), `status` ([dev.pheby.protocol.ChangeStatus]), `type` ([dev.pheby.protocol.ChangedFileType]:
 * file, symlink, submodule; both open enums: show an unknown one as modified / a file), `additions`,
 * `deletions` (line counts, 0 for a binary file) and `binary`; at most 1,000, then `truncated`. Without a
 * worktree it is the working tree's state, so it includes changes made by others in the same directory.
 * Throws [PhebyException]: `not_implemented` when the conversation is not in a git repository,
 * `internal_error` when git did not answer in time, `conversation_not_found`, and `unknown_type` without
 * [Features.CHANGES].
 */
suspend fun PhebyClient.listChanges(conversationId: String): ChangesSnapshot =
    request(ChangesList(conversationId = conversationId))

/**
 * `changes.diff`: the unified diff (3 lines of context) of file [fileId] of [conversationId] against the
 * `base`: `patch`, at most 256 KiB (then `truncated`), null for a binary file; a symlink's patch is about
 * its target string. Throws [PhebyException] `not_found` for a `fileId` the server does not know or that no
 * longer differs from the base (list again), and the errors of [listChanges].
 */
suspend fun PhebyClient.diffChange(conversationId: String, fileId: String): ChangesFile =
    request(ChangesDiff(conversationId = conversationId, fileId = fileId))

/**
 * Every `changes.changed` from now on, of [conversationId] (null: of every conversation): a run (`runId`)
 * ended and the conversation's changes against its base are now `fileCount` files (all of them, also past
 * 1,000), `additions` and `deletions`. List again ([listChanges]) for the files. With `resume` it carries
 * `seq` and a drop loses none: the re-open of a followed conversation replays it.
 */
fun PhebyClient.changeUpdates(conversationId: String? = null): Flow<ChangesChanged> =
    events.filterIsInstance<ChangesChanged>().filter { conversationId == null || it.conversationId == conversationId }
