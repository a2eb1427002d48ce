// Shared benchmark plumbing: servers run in child processes (one core for the
// server, one for the load), report their port on stdout, and are measured by
// the same client code so the ratio compares servers, not harnesses.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** What a server child reports on request (see child-stats.ts). */
export interface ChildStats {
  rss: number;
  heapUsed: number;
  external: number;
  eldP50: number;
  eldP99: number;
  eldMax: number;
}

export interface Spawned {
  child: ChildProcess;
  port: number;
  /** Resident set size of the child, in bytes (Linux /proc). */
  rss(): number;
  /** Ask the child to collect garbage and report memory and event-loop delay since the last call. */
  stats(): Promise<ChildStats>;
  stop(): Promise<void>;
}

/**
 * Start `script` (relative to src/) with tsx (plain node for a `.mjs` script, whose memory then has
 * no TypeScript loader in it); it must print `PORT <n>` once listening.
 */
export async function spawnServer(script: string, env: Record<string, string> = {}): Promise<Spawned> {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const loader = script.endsWith(".mjs") ? [] : ["--import", "tsx"];
  // BENCH_CPU_PROF=<dir> profiles every server child (`node --cpu-prof`), written when it stops.
  const prof = process.env.BENCH_CPU_PROF
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const child = spawn(process.execPath, ["--expose-gc", ...prof, ...loader, path], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // A benchmark that throws must not leave its servers running.
  process.once("exit", () => child.kill("SIGKILL"));
  let pendingStats: ((s: ChildStats) => void) | undefined;
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /PORT (\d+)/.exec(buffer);
      if (match) resolve(Number(match[1]));
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("STATS ")) pendingStats?.(JSON.parse(line.slice(6)) as ChildStats);
      }
    });
    child.once("exit", (code) => reject(new Error(`${script} exited early (${code})`)));
  });
  return {
    child,
    port,
    rss() {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    stats: () =>
      new Promise<ChildStats>((resolve) => {
        pendingStats = resolve;
        child.kill("SIGUSR2");
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** The p-th percentile (0..100) of sorted samples. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The median of samples. */
export function median(xs: number[]): number {
  return xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

/** Print rows as an aligned table. */
export function table(rows: Record<string, string | number>[]): void {
  const keys = Object.keys(rows[0] ?? {});
  const width = keys.map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i]!)).join("  ");
  console.log(line(keys));
  for (const r of rows) console.log(line(keys.map((k) => String(r[k]))));
}
