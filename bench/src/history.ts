// History paging: `conversation.open` with a 500-message page on a
// conversation of 1,000 messages (the baseline, same server, same run) and
// on one of 200,000. The messages are written straight into the server's
// SQLite file while it is stopped (through the API it would take hours).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { BenchClient } from "./client.js";
import { median, percentile, spawnServer, table } from "./harness.js";
import { answerText } from "./stream-text.js";

const SIZES = [1_000, Number(process.env.BENCH_HISTORY_LARGE ?? 200_000)];
const OPENS = Number(process.env.BENCH_HISTORY_OPENS ?? 60);
const PAGE = 500;

const dir = mkdtempSync(join(tmpdir(), "pheby-bench-history-"));
let server = await spawnServer("./pheby-server.ts", { BENCH_DATA_DIR: dir });
const conversations: string[] = [];
{
  const c = await BenchClient.connect(server.port, false);
  for (const _ of SIZES) {
    conversations.push(
      (await c.request({ type: "conversation.create" }, "conversation.created")).conversation_id!,
    );
  }
  c.close();
  await server.stop();
}

process.stderr.write("history: writing messages\n");
const db = new Database(join(dir, "pheby.sqlite"));
const insert = db.prepare("INSERT INTO messages (conversation_id, role, text, ts) VALUES (?, ?, ?, ?)");
// Messages of 50..550 characters; interleaved so both conversations' rows are spread through the table.
const texts = Array.from({ length: 64 }, (_, i) => answerText(50 + ((i * 97) % 500), i + 1));
db.transaction(() => {
  const remaining = [...SIZES];
  for (let n = 0; remaining.some((r) => r > 0); n++) {
    remaining.forEach((left, i) => {
      if (left <= 0) return;
      insert.run(conversations[i], n % 2 ? "assistant" : "user", texts[n % texts.length], Date.now());
      remaining[i] = left - 1;
    });
  }
})();
db.close();

server = await spawnServer("./pheby-server.ts", { BENCH_DATA_DIR: dir });
const rows: Record<string, string | number>[] = [];
const p50s: number[] = [];
try {
  const c = await BenchClient.connect(server.port, false);
  for (const [i, size] of SIZES.entries()) {
    const open = () =>
      c.request(
        { type: "conversation.open", conversation_id: conversations[i], limit: PAGE },
        "conversation.history",
      );
    for (let w = 0; w < 5; w++) await open();
    const times: number[] = [];
    let got = 0;
    for (let k = 0; k < OPENS; k++) {
      const start = performance.now();
      const reply = await open();
      times.push(performance.now() - start);
      got = (reply.messages as unknown[]).length;
    }
    if (got !== PAGE) throw new Error(`page of ${got} messages, not ${PAGE}`);
    times.sort((a, b) => a - b);
    p50s.push(median(times));
    rows.push({
      conversation: `${size.toLocaleString("en")} messages`,
      "p50 ms": median(times).toFixed(2),
      "p99 ms": percentile(times, 99).toFixed(2),
    });
  }
  c.close();
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
rows.push({ conversation: "ratio (large / 1k)", "p50 ms": (p50s[1]! / p50s[0]!).toFixed(2), "p99 ms": "" });
console.log(`\nHistory paging: conversation.open, newest ${PAGE} messages, ${OPENS} opens each (sequential)`);
console.log("baseline: the 1,000-message conversation on the same server, same run\n");
table(rows);
console.log("\ntargets: ratio ≤ 1.5; p50 < 20 ms");
