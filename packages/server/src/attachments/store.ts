import { chmodSync, constants, copyFileSync, readFileSync, realpathSync, renameSync } from "node:fs";
import { type FileHandle, open, readdir, realpath, rename, rm } from "node:fs/promises";
import { basename, join, sep } from "node:path";
import { type AttachmentDescriptor, LIMITS } from "@pheby/protocol";
import type { Logger } from "pino";
import type { AttachmentRef, ProducedFile } from "../agent/port.js";
import { type AgentShare, SHARED_FILE_MODE } from "../agent-user/shared-dir.js";
import { ProtocolError } from "../errors.js";
import type { FileRoots } from "../files/roots.js";
import { type AttachmentRow, QUEUED_HOLDER_PREFIX } from "../store/attachments.js";
import type { Store } from "../store/store.js";
import { newId } from "../util/ids.js";
import { ensurePrivateDir, PRIVATE_FILE_MODE } from "../util/private-files.js";
import { type Clock, iso } from "../util/time.js";
import { sanitiseFilename } from "./filename.js";
import { isTextual, SNIFF_BYTES, sniff } from "./sniff.js";

/** The `message_id` that holds the uploads of a queued send until its run starts. */
export function queuedHolder(runId: string): string {
  return `${QUEUED_HOLDER_PREFIX}${runId}`;
}

/** An attachment claimed by a `chat.send`: what the agent gets and what clients are told. */
export interface Claimed {
  ref: AttachmentRef;
  descriptor: AttachmentDescriptor;
}

/** An opened blob, ready to stream. The open handle survives a concurrent sweep's unlink. */
export interface OpenedBlob {
  row: AttachmentRow;
  handle: FileHandle;
  size: number;
}

/** Why a body was not stored. */
export class AttachmentRejected extends Error {
  constructor(readonly reason: "too_large" | "empty") {
    super(reason === "too_large" ? `over ${LIMITS.uploadBytes} bytes` : "empty body");
  }
}

/** What {@link AttachmentStore.sweep} removed. */
export interface SweepResult {
  expired: number;
  temps: number;
  orphans: number;
}

/** Settings of the attachment store. */
export interface AttachmentStoreOptions {
  dataDir: string;
  store: Store;
  clock: Clock;
  log: Logger;
  /** Days an attachment is kept; 0 keeps it forever (`expires_at: null`). */
  retentionDays: number;
  /** The directories the agent may deliver files from. */
  fileRoots: FileRoots;
  /**
   * The agent runs as another OS user: a claimed upload is handed to it as a copy in this shared
   * directory (mode 0640, the directory's group), since it cannot enter the data directory.
   */
  agentCopies?: AgentShare;
}

const DAY_MS = 86_400_000;
const ID = /^[0-9a-f]{32}$/;
/** Writes are batched up to this many bytes: fewer syscalls, bounded memory per upload. */
const WRITE_BATCH = 256 * 1024;

/** Write all of `chunks`, in order, without copying them together (a file write may be partial). */
async function writeAll(handle: FileHandle, chunks: Buffer[], total: number): Promise<void> {
  const { bytesWritten } = await handle.writev(chunks);
  if (bytesWritten === total) return;
  const rest = Buffer.concat(chunks, total);
  for (let off = bytesWritten; off < total; ) {
    off += (await handle.write(rest, off, total - off)).bytesWritten;
  }
}

/**
 * The attachment store: blobs under `<dataDir>/attachments/blobs/<32 hex>`,
 * in-progress bodies under `…/tmp/`, the index in the SQLite `attachments`
 * table. A body is streamed to a temp file and counted as it arrives,
 * fsynced, renamed to its ID (directory fsynced) and only then indexed, so
 * after a crash there is either a complete indexed blob or a temp file the
 * start sweep removes. No client input ever becomes a path: blob paths come
 * from validated 32-hex IDs, and every open re-checks containment.
 */
export class AttachmentStore {
  readonly root: string;
  readonly #blobs: string;
  readonly #tmp: string;
  readonly #realBlobs: string;
  /** Temp files of bodies being received now; a sweep leaves them alone. */
  readonly #receiving = new Set<string>();
  #sweeping: Promise<SweepResult> | undefined;

  constructor(private readonly opts: AttachmentStoreOptions) {
    this.root = join(opts.dataDir, "attachments");
    this.#blobs = join(this.root, "blobs");
    this.#tmp = join(this.root, "tmp");
    for (const dir of [this.root, this.#blobs, this.#tmp]) ensurePrivateDir(dir);
    this.#realBlobs = realpathSync(this.#blobs);
  }

  // ---- storing ----

  /** Store an uploaded body for a conversation (inbound, unclaimed). Throws {@link AttachmentRejected}. */
  receive(
    body: AsyncIterable<Uint8Array>,
    meta: { conversationId: string; filename: string; declaredType: string | undefined },
  ): Promise<AttachmentRow> {
    return this.#store(body, { ...meta, direction: "inbound", messageId: null });
  }

  /**
   * Store a file the agent produced during a run, anchored to the run's draft
   * message. A path is copied only when its real path lies inside an allowed
   * root and is a regular file; anything else is refused (logged, undefined).
   */
  async fromAgent(
    conversationId: string,
    messageId: string,
    file: ProducedFile,
  ): Promise<AttachmentRow | undefined> {
    const { log } = this.opts;
    if (file.source === "bytes") {
      const filename = sanitiseFilename(file.filename) ?? "file";
      return this.#store([file.bytes], {
        conversationId,
        filename,
        declaredType: file.mimeType,
        direction: "outbound",
        messageId,
      });
    }
    const source = await this.opts.fileRoots.open(file.path);
    if (typeof source === "string") {
      log.warn(
        { conversation: conversationId, path: file.path },
        source === "outside"
          ? "produced file refused: not in an allowed root"
          : source === "unreadable"
            ? "produced file refused: cannot be opened"
            : "produced file refused: not a regular file",
      );
      return undefined;
    }
    try {
      const filename = sanitiseFilename(file.filename) ?? sanitiseFilename(basename(file.path)) ?? "file";
      return await this.#store(source.createReadStream({ autoClose: false }), {
        conversationId,
        filename,
        declaredType: file.mimeType,
        direction: "outbound",
        messageId,
      });
    } finally {
      await source.close().catch(() => {});
    }
  }

  async #store(
    body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    meta: {
      conversationId: string;
      filename: string;
      declaredType: string | undefined;
      direction: "inbound" | "outbound";
      messageId: string | null;
    },
  ): Promise<AttachmentRow> {
    const id = newId();
    const tmpName = `${id}.part`;
    const tmpPath = join(this.#tmp, tmpName);
    this.#receiving.add(tmpName);
    let size = 0;
    const head: Buffer[] = [];
    let headBytes = 0;
    try {
      const handle = await open(tmpPath, "wx", PRIVATE_FILE_MODE);
      try {
        let batch: Buffer[] = [];
        let batched = 0;
        for await (const chunk of body) {
          size += chunk.byteLength;
          if (size > LIMITS.uploadBytes) throw new AttachmentRejected("too_large");
          const buf = Buffer.isBuffer(chunk)
            ? chunk
            : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
          if (headBytes < SNIFF_BYTES) {
            head.push(buf.subarray(0, SNIFF_BYTES - headBytes));
            headBytes += Math.min(buf.length, SNIFF_BYTES - headBytes);
          }
          batch.push(buf);
          batched += buf.length;
          if (batched >= WRITE_BATCH) {
            await writeAll(handle, batch, batched);
            batch = [];
            batched = 0;
          }
        }
        if (batched > 0) await writeAll(handle, batch, batched);
        if (size === 0) throw new AttachmentRejected("empty");
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmpPath, join(this.#blobs, id));
      await this.#syncBlobDir();
    } catch (err) {
      await rm(tmpPath, { force: true });
      throw err;
    } finally {
      this.#receiving.delete(tmpName);
    }
    const kind = sniff(Buffer.concat(head), meta.declaredType, meta.filename);
    const now = this.opts.clock.now();
    const row: AttachmentRow = {
      id,
      conversation_id: meta.conversationId,
      direction: meta.direction,
      filename: meta.filename,
      mime_type: kind.mimeType,
      size,
      kind: kind.kind,
      inline_image: kind.inlineImage ? 1 : 0,
      message_id: meta.messageId,
      created_at: now,
      expires_at: this.opts.retentionDays > 0 ? now + this.opts.retentionDays * DAY_MS : null,
    };
    try {
      this.opts.store.attachments.insert(row);
    } catch (err) {
      await rm(join(this.#blobs, id), { force: true });
      throw err;
    }
    this.opts.log.info(
      { attachment: id, conversation: meta.conversationId, direction: meta.direction, size, kind: row.kind },
      "attachment stored",
    );
    return row;
  }

  /** fsync the blob directory so the rename itself survives power loss. */
  async #syncBlobDir(): Promise<void> {
    const dir = await open(this.#blobs, "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  // ---- reading ----

  #row(id: string): AttachmentRow | undefined {
    return this.opts.store.attachments.get(id);
  }

  #expired(row: AttachmentRow): boolean {
    return row.expires_at !== null && this.opts.clock.now() >= row.expires_at;
  }

  /**
   * Open a registered, unexpired attachment for download, or undefined. The
   * ID must be 32 hex; the blob's real path must lie inside the store, must
   * not be a symlink and must be a regular file of the recorded size.
   */
  async open(id: string): Promise<OpenedBlob | undefined> {
    if (!ID.test(id)) return undefined;
    const row = this.#row(id);
    if (!row || this.#expired(row)) return undefined;
    const path = join(this.#realBlobs, id);
    let handle: FileHandle | undefined;
    try {
      const real = await realpath(path);
      if (real !== path || !real.startsWith(this.#realBlobs + sep)) throw new Error("outside the store");
      handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
      const stat = await handle.stat();
      if (!stat.isFile() || stat.size !== row.size) throw new Error("blob does not match its index row");
      return { row, handle, size: stat.size };
    } catch (err) {
      await handle?.close().catch(() => {});
      this.opts.log.warn({ attachment: id, err: (err as Error).message }, "attachment blob unavailable");
      return undefined;
    }
  }

  /** The wire descriptor of a row. */
  descriptor(row: AttachmentRow): AttachmentDescriptor {
    return {
      attachment_id: row.id,
      filename: row.filename,
      mime_type: row.mime_type,
      size: row.size,
      kind: row.kind,
      inline_image: row.inline_image === 1,
      direction: row.direction,
      conversation_id: row.conversation_id,
      message_id: row.message_id,
      created_at: iso(row.created_at),
      expires_at: row.expires_at === null ? null : iso(row.expires_at),
      download_path: `/attachments/${row.id}`,
    };
  }

  /** Unexpired attachments of a conversation that belong to a message (claimed uploads and deliverables). */
  list(conversationId: string): AttachmentDescriptor[] {
    const rows = this.opts.store.attachments.ofMessages(conversationId, this.opts.clock.now());
    return rows.map((r) => this.descriptor(r));
  }

  /**
   * Move the attachments of a run's draft (`draft-<run_id>`) to the run's final message (`m<n>`),
   * so snapshots place them beside the message `conversation.history` lists.
   */
  assignMessage(draftId: string, messageId: string): void {
    this.opts.store.attachments.moveMessage(draftId, messageId);
  }

  // ---- claims ----

  /**
   * A queued send's run starts: its uploads (claimed for `queued-<run_id>`
   * when it was queued) move to its user message `messageId`. One that
   * expired meanwhile is left out.
   */
  takeQueued(runId: string, messageId: string): Claimed[] {
    const { store, clock } = this.opts;
    return store.transaction(() =>
      store.attachments.ofMessage(queuedHolder(runId), clock.now()).map((row) => {
        store.attachments.setMessage(row.id, messageId);
        row.message_id = messageId;
        return { ref: this.#ref(row), descriptor: this.descriptor(row) };
      }),
    );
  }

  /** A queued send was cancelled: its uploads are unclaimed again, so they can be sent anew. */
  releaseQueued(runId: string): void {
    this.opts.store.attachments.moveMessage(queuedHolder(runId), null);
  }

  /**
   * Claim uploads for the user message `messageId` of a `chat.send`. All or
   * nothing: one unknown, expired, already-sent, outbound or foreign ID
   * throws `bad_request` and claims none (call it inside the transaction that
   * records the message). Text files up to 100 KiB carry their content.
   */
  claim(conversationId: string, ids: readonly string[], messageId: string): Claimed[] {
    return this.opts.store.transaction(() => {
      const claimed: Claimed[] = [];
      for (const id of ids) {
        const row = this.#row(id);
        if (
          !row ||
          row.conversation_id !== conversationId ||
          row.direction !== "inbound" ||
          row.message_id !== null ||
          this.#expired(row)
        ) {
          throw new ProtocolError(
            "bad_request",
            "attachment_ids: unknown, expired, already sent or from another conversation",
          );
        }
        this.opts.store.attachments.setMessage(id, messageId);
        row.message_id = messageId;
        claimed.push({ ref: this.#ref(row), descriptor: this.descriptor(row) });
      }
      return claimed;
    });
  }

  #ref(row: AttachmentRow): AttachmentRef {
    const blob = join(this.#realBlobs, row.id);
    const path = this.opts.agentCopies ? this.#copyForAgent(blob, row.id, this.opts.agentCopies) : blob;
    const ref: AttachmentRef = {
      attachmentId: row.id,
      filename: row.filename,
      mimeType: row.mime_type,
      size: row.size,
      kind: row.kind,
      path,
    };
    if (isTextual(row.mime_type) && row.size <= LIMITS.inlineTextBytes) {
      try {
        ref.inlineText = new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(path));
      } catch {
        // Not UTF-8 after all: the agent gets the path only.
      }
    }
    return ref;
  }

  /**
   * A copy of a blob the agent (another OS user) can read: `<dir>/<id>`, 0640, of the shared group
   * (the setgid directory gives it that group). Synchronous like the claim it is part of; the
   * kernel copies (copy_file_range), and the sweep removes it with its blob.
   */
  #copyForAgent(blob: string, id: string, share: AgentShare): string {
    const copy = join(share.dir, id);
    const temp = `${copy}.part`;
    copyFileSync(blob, temp);
    chmodSync(temp, SHARED_FILE_MODE);
    renameSync(temp, copy);
    return copy;
  }

  // ---- retention ----

  /**
   * Delete expired blobs and their rows, and temp files no upload is writing.
   * `atStart` also removes blobs without a row (a crash between rename and
   * index). Touches only names the store itself creates, inside its root.
   * Each blob is unlinked before its row is deleted, so an interrupted sweep
   * leaves rows whose blob is gone (404, removed by the next sweep): safe to
   * rerun. A download in progress holds an open handle, which outlives the unlink.
   */
  /** Resolves once no sweep is running (shutdown waits for it before closing the database). */
  async idle(): Promise<void> {
    await this.#sweeping?.catch(() => {});
  }

  sweep(atStart = false): Promise<SweepResult> {
    this.#sweeping ??= this.#sweep(atStart).finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  async #sweep(atStart: boolean): Promise<SweepResult> {
    const { store, clock, log } = this.opts;
    const result: SweepResult = { expired: 0, temps: 0, orphans: 0 };
    for (const id of store.attachments.expired(clock.now())) {
      if (!ID.test(id)) continue;
      await rm(join(this.#blobs, id), { force: true });
      if (this.opts.agentCopies) await rm(join(this.opts.agentCopies.dir, id), { force: true });
      store.attachments.delete(id);
      result.expired += 1;
    }
    for (const name of await readdir(this.#tmp)) {
      if (!/^[0-9a-f]{32}\.part$/.test(name) || this.#receiving.has(name)) continue;
      await rm(join(this.#tmp, name), { force: true });
      result.temps += 1;
    }
    if (atStart) {
      for (const name of await readdir(this.#blobs)) {
        if (!ID.test(name) || store.attachments.has(name)) continue;
        await rm(join(this.#blobs, name), { force: true });
        result.orphans += 1;
      }
      // Copies handed to the agent whose attachment is gone (or half-written when the server stopped).
      const copies = this.opts.agentCopies?.dir;
      for (const name of copies ? await readdir(copies) : []) {
        if (ID.test(name) && store.attachments.has(name)) continue;
        if (/^[0-9a-f]{32}(\.part)?$/.test(name)) await rm(join(copies!, name), { force: true });
      }
    }
    if (result.expired + result.temps + result.orphans > 0) log.info(result, "attachment sweep");
    return result;
  }
}
