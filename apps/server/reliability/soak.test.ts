// Soak: 50 clients over 10 conversations; one driver per conversation runs the
// simulator continuously through plain messages, tools, approvals, uploads sent as attachments and
// produced files. Every client checks every stream it sees (each delta extends the previous one,
// the final text is what the agent produced, the lifecycle is in order) and at the end all 50 must
// have seen the same runs in the same order. RSS and open fds are sampled throughout.
// PHEBY_SOAK_SECONDS sets the length (default 90 in CI; `pnpm test:reliability:long` runs 330).
import type { ServerMessage } from "@pheby/protocol";
import { afterAll, describe, expect, it } from "vitest";
import {
  type App,
  createConversation,
  envNumber,
  fdCount,
  Peer,
  plainReply,
  rssMiB,
  SECRET,
  sleep,
  startApp,
  upload,
} from "./harness.js";

const SECONDS = envNumber("PHEBY_SOAK_SECONDS", 90);
const CLIENTS = 50;
const CONVERSATIONS = 10;
/** Stated bounds on growth from the start of the measuring window to the end. */
const RSS_GROWTH_BOUND_MIB = 40;
/** fds: the drivers' uploads and downloads keep up to two HTTP keep-alive sockets each open at times. */
const FD_GROWTH_BOUND = 25;
/** The window starts at minute 1, or at a third of a shorter run. */
const WINDOW_START_S = Math.min(60, SECONDS / 3);

const COMMAND = "rm -rf /tmp/pheby-sim-build";

let app: App | undefined;
afterAll(async () => {
  await app?.kill();
});

/** What one client saw of each conversation: the runs in order, with their final text. */
class Observer {
  readonly runs = new Map<string, { runId: string; text: string; status: string }[]>();
  readonly problems: string[] = [];
  frames = 0;
  deltas = 0;
  /** message_id → last cumulative text; run_id → lifecycle state. */
  readonly #draft = new Map<string, string>();
  readonly #state = new Map<string, "accepted" | "started" | "complete">();
  readonly #final = new Map<string, string>();
  /** message_id → the run whose message.start named it. */
  readonly #runOf = new Map<string, string>();

  constructor(
    readonly name: string,
    peer: Peer,
  ) {
    peer.keepFrames = false;
    peer.on((m) => this.#see(m));
  }

  #problem(what: string) {
    if (this.problems.length < 20) this.problems.push(`${this.name}: ${what}`);
  }

  #see(m: ServerMessage): void {
    this.frames++;
    switch (m.type) {
      case "error":
        this.#problem(`error ${m.error.code}: ${m.error.message}`);
        break;
      case "run.accepted":
        if (this.#state.has(m.run_id)) this.#problem(`run ${m.run_id} accepted twice`);
        this.#state.set(m.run_id, "accepted");
        break;
      case "message.start":
        // run.accepted reaches every connection before message.start (the sender's copy carries request_id).
        if (this.#state.get(m.run_id) !== "accepted")
          this.#problem(`message.start out of order in ${m.run_id}`);
        this.#state.set(m.run_id, "started");
        this.#draft.set(m.message_id, "");
        this.#runOf.set(m.message_id, m.run_id);
        break;
      case "message.delta": {
        this.deltas++;
        const prev = this.#draft.get(m.message_id);
        if (prev === undefined) this.#problem(`delta for unknown message ${m.message_id}`);
        else if (!m.text.startsWith(prev) || m.text.length <= prev.length)
          this.#problem(`delta of ${m.message_id} does not extend the previous one`);
        this.#draft.set(m.message_id, m.text);
        break;
      }
      case "message.complete": {
        if (m.kind === "notice") break;
        const prev = this.#draft.get(m.message_id);
        if (prev === undefined || !m.text.startsWith(prev))
          this.#problem(`complete of ${m.message_id} is not the drafts' end`);
        this.#draft.delete(m.message_id);
        const runId = this.#runOf.get(m.message_id) ?? m.message_id;
        this.#runOf.delete(m.message_id);
        if (this.#state.get(runId) !== "started") this.#problem(`message.complete out of order in ${runId}`);
        this.#state.set(runId, "complete");
        this.#final.set(runId, m.text);
        break;
      }
      case "run.finished": {
        if (this.#state.get(m.run_id) !== "complete")
          this.#problem(`run.finished before message.complete in ${m.run_id}`);
        this.#state.delete(m.run_id);
        const list = this.runs.get(m.conversation_id) ?? [];
        list.push({ runId: m.run_id, text: this.#final.get(m.run_id) ?? "", status: m.status });
        this.#final.delete(m.run_id);
        this.runs.set(m.conversation_id, list);
        break;
      }
    }
  }
}

/** One conversation's driver: runs scenarios back to back and records what the agent must have said. */
async function drive(peer: Peer, conversation: string, deadline: number, expected: Map<string, string>) {
  let choice: "once" | "deny" = "once";
  peer.on((m) => {
    if (m.type === "approval.request" && m.conversation_id === conversation) {
      choice = m.approval_id.charCodeAt(0) % 2 === 0 ? "once" : "deny";
      peer.send({ type: "approval.respond", approval_id: m.approval_id, choice });
    }
  });
  for (let i = 0; Date.now() < deadline; i++) {
    const kind = i % 5;
    let text: string;
    let expect: (m: ServerMessage[]) => string;
    let attachment_ids: string[] | undefined;
    if (kind === 0) {
      text = `soak message ${i} in ${conversation.slice(0, 6)}`;
      expect = () => plainReply(text);
    } else if (kind === 1) {
      text = "/sim tools";
      expect = () => "I ran two tools: web_search completed and read_file failed.";
    } else if (kind === 2) {
      text = "/sim approval";
      expect = () =>
        choice === "deny"
          ? `Denied: I did not run \`${COMMAND}\` and will not retry.`
          : `Approved (once): I ran \`${COMMAND}\`.`;
    } else if (kind === 3) {
      const body = `# notes ${i}\n${"line of notes\n".repeat(i % 7)}`;
      const up = await upload(app!.url, conversation, `notes-${i}.md`, body);
      if (up.status !== 201) throw new Error(`upload failed: ${up.status}`);
      attachment_ids = [up.body.attachment!.attachment_id];
      text = "see attached";
      const size = Buffer.byteLength(body);
      expect = () => plainReply(text, ` You attached 1 file: notes-${i}.md (${size} bytes, text inlined).`);
    } else {
      text = "/sim file";
      expect = (seen) => {
        const added = seen.find((m) => m.type === "attachment.added");
        return `Here is your document: pheby-report.pdf (${added?.type === "attachment.added" ? added.attachment.size : "?"} bytes).`;
      };
    }
    const seen: ServerMessage[] = [];
    const off = peer.on((m) => {
      if ("conversation_id" in m && m.conversation_id === conversation) seen.push(m);
    });
    const finished = peer.upcoming(
      (m) => m.type === "run.finished" && m.conversation_id === conversation,
      60_000,
    );
    const accepted = await peer.request({
      type: "chat.send",
      conversation_id: conversation,
      text,
      ...(attachment_ids ? { attachment_ids } : {}),
    });
    if (accepted.type !== "run.accepted") throw new Error(`chat.send refused: ${JSON.stringify(accepted)}`);
    await finished;
    off();
    expected.set(accepted.run_id, expect(seen));
    // The produced file downloads whole.
    const added = seen.find((m) => m.type === "attachment.added");
    if (added?.type === "attachment.added") {
      const res = await fetch(`${app!.url}${added.attachment.download_path}`, {
        headers: { authorization: `Bearer ${SECRET}` },
      });
      const bytes = await res.arrayBuffer();
      if (res.status !== 200 || bytes.byteLength !== added.attachment.size)
        throw new Error("download mismatch");
    }
  }
}

describe("soak", () => {
  it(`50 clients over 10 conversations for ${SECONDS} s: nothing lost or misordered, no errors, RSS and fds flat`, async () => {
    app = await startApp();
    const peers = await Promise.all(Array.from({ length: CLIENTS }, () => Peer.ready(app!.wsUrl)));
    const conversations: string[] = [];
    for (let c = 0; c < CONVERSATIONS; c++)
      conversations.push(await createConversation(peers[c]!, `soak ${c}`));
    const observers = peers.map((p, i) => new Observer(`client ${i}`, p));
    // Everyone follows "their" conversation's history too, as a phone would on open.
    for (let i = 0; i < CLIENTS; i++) {
      const open = await peers[i]!.request({
        type: "conversation.open",
        conversation_id: conversations[i % CONVERSATIONS],
      });
      expect(open.type).toBe("conversation.history");
    }

    const samples: { t: number; rss: number; fds: number }[] = [];
    const t0 = Date.now();
    const sampler = setInterval(
      () => samples.push({ t: (Date.now() - t0) / 1000, rss: rssMiB(app!.pid), fds: fdCount(app!.pid) }),
      2_000,
    );
    const expected = new Map<string, string>();
    const deadline = t0 + SECONDS * 1000;
    await Promise.all(conversations.map((c, i) => drive(peers[i]!, c, deadline, expected)));
    const elapsed = (Date.now() - t0) / 1000;
    clearInterval(sampler);
    await sleep(200);

    // Everyone saw every run of every conversation, in the same order, with the agent's exact text.
    const problems = observers.flatMap((o) => o.problems);
    const reference = observers[0]!;
    for (const c of conversations) {
      const runs = reference.runs.get(c) ?? [];
      for (const r of runs) {
        if (r.status !== "completed") problems.push(`run ${r.runId} ${r.status}`);
        if (r.text !== expected.get(r.runId))
          problems.push(
            `run ${r.runId}: final text ${JSON.stringify(r.text)} differs from the agent's ${JSON.stringify(expected.get(r.runId))}`,
          );
      }
      for (const o of observers) {
        if (JSON.stringify(o.runs.get(c)) !== JSON.stringify(runs))
          problems.push(`${o.name} saw other runs of ${c}`);
      }
    }
    problems.push(
      ...peers.flatMap((p) => p.invalid.map((v) => `invalid frame: ${v.error}: ${v.raw.slice(0, 300)}`)),
    );
    problems.push(
      ...peers.filter((p) => p.closeState?.code !== undefined).map((p) => `closed ${p.closeState?.code}`),
    );

    const window = samples.filter((s) => s.t >= WINDOW_START_S);
    const first = window[0]!;
    const rssGrowth = Math.max(...window.map((s) => s.rss)) - first.rss;
    const fdGrowth = Math.max(...window.map((s) => s.fds)) - first.fds;
    const runs = expected.size;
    const frames = observers.reduce((n, o) => n + o.frames, 0);
    const deltas = observers.reduce((n, o) => n + o.deltas, 0);
    console.log(
      `[soak] ${SECONDS} s, ${CLIENTS} clients, ${CONVERSATIONS} conversations: ${runs} runs ` +
        `(${(runs / elapsed).toFixed(2)} runs/s), ${frames} frames delivered (${Math.round(frames / elapsed)}/s, ` +
        `${deltas} deltas); ${problems.length} problems; from ${first.t.toFixed(0)} s to the end: RSS ` +
        `${first.rss.toFixed(0)} -> max ${(first.rss + rssGrowth).toFixed(0)} MiB (+${rssGrowth.toFixed(1)}, bound ` +
        `${RSS_GROWTH_BOUND_MIB}), fds ${first.fds} -> max ${first.fds + fdGrowth} (bound +${FD_GROWTH_BOUND})`,
    );
    expect(problems.slice(0, 20)).toEqual([]);
    expect(runs).toBeGreaterThan(CONVERSATIONS * 5);
    expect(rssGrowth).toBeLessThan(RSS_GROWTH_BOUND_MIB);
    expect(fdGrowth).toBeLessThanOrEqual(FD_GROWTH_BOUND);
    for (const p of peers) p.close();
  });
});
