// The inbox extension's conversation.search: the server's FTS5 query (InboxStore.search, the code
// the handler runs) over 10,000 messages, against a LIKE scan of the same table (InboxStore.scan)
// in the same run, on a real SQLite file with the server's pragmas. Both return the newest 20
// matches of live conversations. Internal modules of @pheby/server are imported from its source:
// they are not part of its public API.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "../../packages/server/src/store/store.js";
import { median, table } from "./harness.js";

const MESSAGES = Number(process.env.BENCH_SEARCH_MESSAGES ?? 10_000);
const CONVERSATIONS = 100;
const WORDS_PER_MESSAGE = 40;
const RUNS = Number(process.env.BENCH_SEARCH_RUNS ?? 21);
const LIMIT = 20;

// A deterministic vocabulary with a Zipf-like spread: a few words are everywhere, most are rare.
const VOCABULARY = Array.from({ length: 5_000 }, (_, i) => `w${i.toString(36)}x`);
let seed = 42;
function random(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
}
function word(): string {
  // Inverse of a 1/rank distribution over the vocabulary.
  return VOCABULARY[Math.min(VOCABULARY.length - 1, Math.floor(VOCABULARY.length ** random()) - 1)]!;
}

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-search-"));
const store = new Store(dir);
try {
  const t0 = Date.parse("2026-01-01T00:00:00Z");
  store.transaction(() => {
    for (let c = 0; c < CONVERSATIONS; c++) {
      store.createConversation({
        id: c.toString(16).padStart(32, "0"),
        name: `c${c}`,
        session_id: null,
        source: "bench",
        created_at: t0,
      });
    }
    for (let m = 0; m < MESSAGES; m++) {
      const text = Array.from({ length: WORDS_PER_MESSAGE }, word).join(" ");
      const id = (m % CONVERSATIONS).toString(16).padStart(32, "0");
      store.addMessage(
        id,
        m % 2 === 0 ? "user" : "assistant",
        text,
        t0 + m * 1000,
        m % 2 === 0 ? null : `r${m}`,
      );
    }
  });

  /** Median milliseconds of `fn` over RUNS calls (after one warm-up), and its result count. */
  const time = (fn: () => unknown[]): { ms: number; hits: number } => {
    const hits = fn().length;
    const samples: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const start = process.hrtime.bigint();
      fn();
      samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    return { ms: median(samples), hits };
  };

  const count = (w: string) =>
    (store.db.prepare("SELECT COUNT(*) AS n FROM messages WHERE text LIKE ?").get(`%${w}%`) as { n: number })
      .n;
  const rows: Record<string, string | number>[] = [];
  for (const [label, query] of [
    ["rare word", VOCABULARY[4_000]!],
    ["medium word", VOCABULARY[300]!],
    ["common word", VOCABULARY[2]!],
    ["absent word", "nowherezz"],
  ] as const) {
    const fts = time(() => store.inbox.search(query, LIMIT));
    const like = time(() => store.inbox.scan(query, LIMIT));
    rows.push({
      query: label,
      "messages matching": count(query),
      "FTS5 ms (ours)": fts.ms.toFixed(2),
      "LIKE scan ms": like.ms.toFixed(2),
      "LIKE / FTS5": `${(like.ms / fts.ms).toFixed(1)}×`,
      results: `${fts.hits} / ${like.hits}`,
    });
  }
  console.log(
    `\nconversation.search over ${MESSAGES.toLocaleString("en")} messages (${CONVERSATIONS} conversations, ${WORDS_PER_MESSAGE} words each): median of ${RUNS} runs, newest ${LIMIT}`,
  );
  console.log("baseline: a LIKE '%word%' scan of the same table, same ordering and limit, same run\n");
  table(rows);
} finally {
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
