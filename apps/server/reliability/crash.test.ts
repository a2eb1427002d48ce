// Crash recovery: SIGKILL the built server at random points, on one data directory that lives
// through every run, during streaming, uploads, approval resolution and the start-up retention
// sweep. A ledger records what clients saw confirmed; after every restart the database must pass
// PRAGMA integrity_check, everything confirmed must still be there, no partial attachment may be
// visible, the temp files must be gone and the runs that were active must be recorded as failed.
// Reproduce with PHEBY_CRASH_SEED; PHEBY_CRASH_RUNS sets the number of kills (default 20).
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ServerMessage } from "@pheby/protocol";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import {
  type App,
  createConversation,
  envNumber,
  Peer,
  SECRET,
  sleep,
  startApp,
  tempDir,
  upload,
  waitFor,
} from "./harness.js";

const SEED = envNumber("PHEBY_CRASH_SEED", 20_2616);
const RUNS = envNumber("PHEBY_CRASH_RUNS", 20);
const PHASES = ["streaming", "uploads", "approvals", "sweep"] as const;
type Phase = (typeof PHASES)[number];

/** mulberry32: a tiny seeded PRNG so kill points are reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED);
const between = (lo: number, hi: number) => Math.floor(lo + random() * (hi - lo));

const dataDir = join(tempDir("pheby-crash-"), "data");
const dbPath = join(dataDir, "pheby.sqlite");

/** What clients saw confirmed, across all runs. */
const ledger = {
  /** conversation → confirmed messages in order (user: run.accepted seen; assistant: message.complete seen). */
  messages: new Map<string, { role: "user" | "assistant"; text: string }[]>(),
  /** Uploads that got 201: id → sha256 of the bytes. */
  uploads: new Map<string, string>(),
  /** Attachments expired on purpose before a sweep run: must be gone (404) afterwards. */
  expired: new Set<string>(),
  /** Runs seen accepted but not finished when the server died. */
  interrupted: new Set<string>(),
  /** Runs seen finished. */
  finished: new Set<string>(),
};
const stats = { kills: 0, confirmedMessages: 0, confirmedUploads: 0, interruptedRuns: 0, midSweep: 0 };

let app: App | undefined;
afterAll(async () => {
  await app?.kill();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** Follow the run lifecycle of every conversation on `peer` into the ledger. */
function track(peer: Peer): void {
  const pendingUser = new Map<string, string>();
  peer.on((m: ServerMessage) => {
    if (m.type === "run.accepted" && m.request_id && pendingUser.has(m.request_id)) {
      const list = ledger.messages.get(m.conversation_id) ?? [];
      list.push({ role: "user", text: pendingUser.get(m.request_id)! });
      ledger.messages.set(m.conversation_id, list);
      ledger.interrupted.add(m.run_id);
    }
    if (m.type === "message.complete" && m.kind !== "notice") {
      ledger.messages.get(m.conversation_id)?.push({ role: "assistant", text: m.text });
    }
    if (m.type === "run.finished") {
      ledger.interrupted.delete(m.run_id);
      ledger.finished.add(m.run_id);
    }
  });
  chatSenders.set(peer, (conversation_id: string, text: string, attachment_ids?: string[]) => {
    const request_id = `c${Math.random().toString(36).slice(2)}`;
    pendingUser.set(request_id, text);
    peer.send({
      type: "chat.send",
      conversation_id,
      text,
      request_id,
      ...(attachment_ids ? { attachment_ids } : {}),
    });
  });
}
const chatSenders = new Map<Peer, (c: string, t: string, a?: string[]) => void>();
const chat = (peer: Peer, c: string, t: string, a?: string[]) => chatSenders.get(peer)!(c, t, a);

/** Keep `conversations` busy with new runs (each started when the previous finished) until stopped. */
function keepChatting(peer: Peer, conversations: string[], text: (i: number) => string): () => void {
  let stopped = false;
  let i = 0;
  peer.on((m) => {
    if (stopped || m.type !== "run.finished" || !conversations.includes(m.conversation_id)) return;
    chat(peer, m.conversation_id, text(i++));
  });
  for (const c of conversations) chat(peer, c, text(i++));
  return () => {
    stopped = true;
  };
}

async function phaseStreaming(peer: Peer, conversations: string[]): Promise<void> {
  keepChatting(peer, conversations, (i) =>
    i % 4 === 3 ? "/sim long 300000" : `streaming message ${i} ${random()}`,
  );
  await sleep(between(50, 2500));
}

async function phaseUploads(peer: Peer, conversations: string[]): Promise<void> {
  const url = app!.url; // this server only: the loops end when it dies
  const run = async (k: number) => {
    for (let n = 0; ; n++) {
      const bytes = Buffer.alloc(between(1, 6 * 1024 * 1024), `${k}-${n}-`);
      const conv = conversations[k % conversations.length]!;
      const res = await upload(url, conv, `f-${k}-${n}.bin`, bytes).catch(() => undefined);
      if (res?.status !== 201) return;
      const id = res.body.attachment!.attachment_id;
      ledger.uploads.set(id, sha(bytes));
      // Claim some of them in a chat.send, so kills also land between claim and broadcast.
      if (n % 2 === 0) chat(peer, conv, `see attached ${id}`, [id]);
    }
  };
  for (let k = 0; k < 4; k++) void run(k);
  await sleep(between(20, 1500));
}

async function phaseApprovals(peer: Peer, conversations: string[]): Promise<void> {
  const choices = ["once", "session", "always", "deny"] as const;
  peer.on((m) => {
    if (m.type !== "approval.request") return;
    setTimeout(
      () =>
        peer.send({ type: "approval.respond", approval_id: m.approval_id, choice: choices[between(0, 4)] }),
      between(0, 200),
    );
  });
  keepChatting(peer, conversations, () => "/sim approval");
  await sleep(between(100, 2500));
}

/** Expire a random 30% of the stored attachments while the server is down (time passing). */
function expireSome(): void {
  const db = new Database(dbPath);
  const rows = db.prepare("SELECT id FROM attachments").all() as { id: string }[];
  const expire = db.prepare("UPDATE attachments SET expires_at = 1 WHERE id = ?");
  pendingExpiry = 0;
  for (const { id } of rows) {
    if (random() < 0.3) {
      expire.run(id);
      pendingExpiry++;
      ledger.expired.add(id);
      ledger.uploads.delete(id);
    }
  }
  db.close();
}

/** Seed attachments for the sweep runs: many small uploads, so a sweep takes long enough to hit. */
async function seedAttachments(conversation: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 20) {
    await Promise.all(
      Array.from({ length: 20 }, async (_, j) => {
        const bytes = Buffer.from(`seed ${i + j} ${"x".repeat(between(1, 4096))}`);
        const res = await upload(app!.url, conversation, `seed-${i + j}.txt`, bytes);
        if (res.status === 201) ledger.uploads.set(res.body.attachment!.attachment_id, sha(bytes));
      }),
    );
  }
}

/** After a kill in a sweep run: did it land mid-sweep (some expired attachments gone, some not)? */
function midSweep(): boolean {
  const left = expiredLeft();
  return left > 0 && left < pendingExpiry;
}

/**
 * Runs left `running` by the kill, read from a copy of the database files so the server's own
 * start-up does the WAL recovery on the originals.
 */
function runningAtDeath(): string[] {
  const copy = tempDir("pheby-crash-copy-");
  for (const suffix of ["", "-wal", "-shm"]) {
    if (existsSync(dbPath + suffix)) copyFileSync(dbPath + suffix, join(copy, `pheby.sqlite${suffix}`));
  }
  const db = new Database(join(copy, "pheby.sqlite"));
  try {
    return (db.prepare("SELECT run_id FROM runs WHERE status = 'running'").all() as { run_id: string }[]).map(
      (r) => r.run_id,
    );
  } finally {
    db.close();
    rmSync(copy, { recursive: true, force: true });
  }
}

/** How many of the attachments expired on purpose still have their row. */
function expiredLeft(): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM attachments WHERE expires_at = 1").get() as { n: number })
      .n;
  } finally {
    db.close();
  }
}
let pendingExpiry = 0;

async function history(peer: Peer, conversation: string): Promise<{ role: string; text: string }[]> {
  const all: { role: string; text: string }[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await peer.request({
      type: "conversation.open",
      conversation_id: conversation,
      limit: 500,
      ...(before ? { before_message_id: before } : {}),
    });
    if (page.type !== "conversation.history") throw new Error(JSON.stringify(page));
    all.unshift(...page.messages.map((m) => ({ role: m.role, text: m.text })));
    if (!page.has_more || page.messages.length === 0) return all;
    before = page.messages[0]!.message_id;
  }
}

/** True when `sub` appears in `full` in order (other messages may sit between). */
function isSubsequence(sub: { role: string; text: string }[], full: { role: string; text: string }[]) {
  let j = 0;
  for (const m of full) if (j < sub.length && m.role === sub[j]!.role && m.text === sub[j]!.text) j++;
  return j === sub.length;
}

async function verify(peer: Peer, run: number, phase: Phase, atDeath: string[]): Promise<void> {
  const where = `run ${run} (${phase})`;
  const db = new Database(dbPath, { readonly: true });
  try {
    expect(db.pragma("integrity_check", { simple: true }), `${where}: integrity_check`).toBe("ok");
    const rows = db.prepare("SELECT id, size FROM attachments").all() as { id: string; size: number }[];
    const blobsDir = join(dataDir, "attachments", "blobs");
    // No partial attachment is visible: every indexed attachment has its whole blob, and no blob is unindexed.
    for (const { id, size } of rows) {
      const blob = join(blobsDir, id);
      expect(existsSync(blob) && statSync(blob).size === size, `${where}: blob of ${id} whole`).toBe(true);
    }
    const indexed = new Set(rows.map((r) => r.id));
    expect(
      readdirSync(blobsDir).filter((n) => !indexed.has(n)),
      `${where}: unindexed blobs`,
    ).toEqual([]);
    expect(readdirSync(join(dataDir, "attachments", "tmp")), `${where}: temp files`).toEqual([]);
    for (const id of ledger.expired) expect(indexed.has(id), `${where}: expired ${id} swept`).toBe(false);
    // Runs that were running when the server died are recorded as failed; none is left running.
    const run = db.prepare("SELECT status, error FROM runs WHERE run_id = ?");
    for (const id of atDeath) {
      expect(run.get(id), `${where}: run ${id} running at the kill`).toEqual({
        status: "failed",
        error: "The server stopped during this run",
      });
    }
    // A run a client saw start but not finish may also have finished just before the kill.
    for (const id of ledger.interrupted) {
      expect(["completed", "cancelled", "failed"], `${where}: run ${id}`).toContain(
        (run.get(id) as { status: string } | undefined)?.status,
      );
    }
    expect(db.prepare("SELECT count(*) AS n FROM runs WHERE status = 'running'").get(), where).toEqual({
      n: 0,
    });
  } finally {
    db.close();
  }
  stats.interruptedRuns += atDeath.length;
  ledger.interrupted.clear();
  // Every message a client saw confirmed is in history, in order.
  for (const [conversation, confirmed] of ledger.messages) {
    const seen = await history(peer, conversation);
    expect(isSubsequence(confirmed, seen), `${where}: confirmed messages of ${conversation} in history`).toBe(
      true,
    );
  }
  // Every confirmed upload downloads whole; expired ones are gone.
  const ids = [...ledger.uploads.keys()];
  for (const id of ids.sort(() => random() - 0.5).slice(0, 40)) {
    const res = await fetch(`${app!.url}/attachments/${id}`, {
      headers: { authorization: `Bearer ${SECRET}` },
    });
    expect(res.status, `${where}: download ${id}`).toBe(200);
    expect(sha(Buffer.from(await res.arrayBuffer())), `${where}: bytes of ${id}`).toBe(
      ledger.uploads.get(id),
    );
  }
  for (const id of [...ledger.expired].slice(0, 20)) {
    const res = await fetch(`${app!.url}/attachments/${id}`, {
      headers: { authorization: `Bearer ${SECRET}` },
    });
    expect(res.status, `${where}: expired ${id}`).toBe(404);
  }
}

describe("crash recovery under SIGKILL", () => {
  it(`loses nothing confirmed over ${RUNS} SIGKILLs at random points (seed ${SEED})`, async () => {
    app = await startApp({ dataDir });
    let peer = await Peer.ready(app.wsUrl);
    track(peer);
    const conversations = [
      await createConversation(peer, "a"),
      await createConversation(peer, "b"),
      await createConversation(peer, "c"),
    ];
    for (const c of conversations) ledger.messages.set(c, []);
    await seedAttachments(conversations[0]!, 300);

    for (let run = 1; run <= RUNS; run++) {
      const phase = PHASES[(run - 1) % PHASES.length]!;
      if (phase === "sweep") {
        // Kill during the start-up sweep of attachments expired while the server was down.
        await app.kill();
        expireSome();
        app = await startApp({ dataDir, waitListening: false });
        // Kill once the start-up sweep has deleted a random number of them: mid-sweep.
        const k = between(1, pendingExpiry);
        const until = Date.now() + 30_000;
        while (expiredLeft() > pendingExpiry - k && !app.output().includes("pheby-server listening")) {
          if (Date.now() > until) throw new Error("the start-up sweep never ran");
          await sleep(1);
        }
      } else if (phase === "streaming") await phaseStreaming(peer, conversations);
      else if (phase === "uploads") await phaseUploads(peer, conversations);
      else await phaseApprovals(peer, conversations);
      await app.kill();
      stats.kills++;
      if (phase === "sweep" && midSweep()) stats.midSweep++;
      const atDeath = runningAtDeath();
      peer.close();
      await sleep(50);
      for (const m of ledger.messages.values())
        stats.confirmedMessages = Math.max(stats.confirmedMessages, m.length);

      app = await startApp({ dataDir });
      peer = await Peer.ready(app.wsUrl);
      track(peer);
      await waitFor(() => readdirSync(join(dataDir, "attachments", "tmp")).length === 0, 5_000, "temp sweep");
      await verify(peer, run, phase, atDeath);
      expect(peer.invalid, `run ${run}: invalid frames`).toEqual([]);
    }
    stats.confirmedUploads = ledger.uploads.size;
    const total = [...ledger.messages.values()].reduce((n, m) => n + m.length, 0);
    console.log(
      `[crash] seed ${SEED}: ${stats.kills} SIGKILLs survived; ${total} confirmed messages and ${stats.confirmedUploads} ` +
        `uploads intact; ${stats.interruptedRuns} runs that were running at a kill recorded failed; ${ledger.expired.size} expired ` +
        `attachments swept (${stats.midSweep} kills landed mid-sweep); ${ledger.finished.size} runs finished`,
    );
    expect(stats.kills).toBe(RUNS);
    peer.close();
  });
});
