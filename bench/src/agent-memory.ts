// What each agent costs Pheby in memory and processes. For each agent, a real @pheby/server in a
// child process (agent-memory-server.ts) with 1, 3 and 10 conversations, idle (sessions open, no
// turn) and after one turn each (a call of Pheby's `schedule_list` tool over MCP): the resident
// memory (VmRSS from /proc/<pid>/status, summed) of Pheby's process plus every Pheby MCP relay
// process (`dist/mcp.js`) under it, apart from the agents' own processes, reported beside it.
// RssAnon (the private part of RSS: Node's binary is mapped shared by every Node process) is given
// too. The agents are the scripted ACP agent of @pheby/server's tests as real child processes:
// one declaring `mcpCapabilities.http` (an MCP client per session, as Codex), one without it (a
// relay per session), one without it sharing one MCP client per process (as Hermes). "No agent"
// is the same server with the simulator, the base of "per added agent". Baselines in the same run:
// a bare Node.js process, and a stdio MCP server on the MCP SDK with Pheby's six tools (what Pheby
// launched per agent process before the relay).
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BenchClient } from "./client.js";
import { spawnServer, table } from "./harness.js";

const COUNTS = [1, 3, 10];
const MB = 1024 * 1024;
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const fakeAgent = fileURLToPath(new URL("../../packages/server/test/acp/fake-agent.ts", import.meta.url));

interface Agent {
  name: string;
  env?: Record<string, string>;
}
const AGENTS: Agent[] = [
  { name: "no agent (simulator)" },
  { name: "fake, http", env: { FAKE_CAPS: JSON.stringify({ mcpCapabilities: { http: true } }) } },
  { name: "fake, stdio, client per session", env: {} },
  { name: "fake, stdio, one client", env: { FAKE_MCP_SHARED: "1" } },
];

interface Proc {
  pid: number;
  ppid: number;
  rss: number;
  anon: number;
  cmd: string;
}

function proc(pid: number): Proc | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
    return {
      pid,
      ppid: Number(/PPid:\s+(\d+)/.exec(status)?.[1]),
      rss: kb("VmRSS"),
      anon: kb("RssAnon"),
      cmd: readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" "),
    };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** Every process under `root` (not `root` itself). */
function descendants(root: number): Proc[] {
  const all = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map((d) => proc(Number(d)))
    .filter((p): p is Proc => p !== undefined);
  const found: Proc[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const children = all.filter((p) => frontier.includes(p.ppid));
    found.push(...children);
    frontier = children.map((p) => p.pid);
  }
  return found;
}

const isRelay = (p: Proc) => p.cmd.includes("/dist/mcp.js");
/** tsx's esbuild service, which runs the bench's TypeScript: neither Pheby nor an agent. */
const isHarness = (p: Proc) => p.cmd.includes("esbuild");
const sum = (ps: Proc[], key: "rss" | "anon") => ps.reduce((a, p) => a + p[key], 0);

interface Sample {
  agent: string;
  conversations: number;
  phase: "idle" | "after a turn";
  pheby: Proc;
  relays: Proc[];
  agents: Proc[];
}

async function measureAgent(agent: Agent, count: number): Promise<Sample[]> {
  const dir = mkdtempSync(join(tmpdir(), "pheby-bench-agent-"));
  const server = await spawnServer("./agent-memory-server.ts", {
    ...(agent.env
      ? {
          BENCH_AGENT_COMMAND: JSON.stringify([process.execPath, "--import", tsx, fakeAgent]),
          BENCH_AGENT_ENV: JSON.stringify({ FAKE_STATE: join(dir, "state.json"), ...agent.env }),
          BENCH_AGENT_CWD: dir,
        }
      : {}),
  });
  const client = await BenchClient.connect(server.port, false);
  const conversations: string[] = [];
  for (let i = 0; i < count; i++) {
    conversations.push(
      (await client.request({ type: "conversation.create" }, "conversation.created")).conversation_id!,
    );
  }
  const sample = async (phase: Sample["phase"]): Promise<Sample> => {
    await server.stats(); // a full GC in Pheby first, so heap garbage does not count
    const under = descendants(server.child.pid!);
    return {
      agent: agent.name,
      conversations: count,
      phase,
      pheby: proc(server.child.pid!)!,
      relays: under.filter(isRelay),
      agents: under.filter((p) => !isRelay(p) && !isHarness(p)),
    };
  };
  const idle = await sample("idle");
  for (const conversation_id of conversations) {
    const accepted = await client.request(
      { type: "chat.send", conversation_id, text: agent.env ? "mcp schedule_list" : "hello" },
      "run.accepted",
    );
    const finished = await client.next((f) => f.type === "run.finished" && f.run_id === accepted.run_id);
    if (finished.status !== "completed") throw new Error(`a turn of ${agent.name} ended ${finished.status}`);
  }
  const turned = await sample("after a turn");
  client.close();
  await server.stop();
  return [idle, turned];
}

/** Resident memory of a process started with `args`, once it printed `ready` (after reading `input`). */
async function baseline(args: string[], input: object[], ready: string) {
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  await new Promise<void>((resolve) => {
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes(ready)) resolve();
    });
    for (const message of input) child.stdin!.write(`${JSON.stringify(message)}\n`);
  });
  const measured = proc(child.pid!)!;
  child.kill();
  return measured;
}

const bare = await baseline(["-e", "console.log('ready'); setInterval(() => {}, 1 << 30)"], [], "ready");
const sdkServer = await baseline(
  [fileURLToPath(new URL("./sdk-stdio-server.mjs", import.meta.url))],
  [
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "b", version: "1" } },
    },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
    { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "schedule_list", arguments: {} } },
  ],
  '"id":3',
);

process.setMaxListeners(0); // each server child adds an exit listener (harness.ts)
const samples: Sample[] = [];
for (const agent of AGENTS) for (const count of COUNTS) samples.push(...(await measureAgent(agent, count)));

const mb = (bytes: number) => (bytes / MB).toFixed(1);
const total = (s: Sample, key: "rss" | "anon") => s.pheby[key] + sum(s.relays, key);
console.log(
  "\nAgent memory: Pheby's process plus its MCP relays (RSS, and its private part RssAnon), the agents' own beside it.",
);
table(
  samples.map((s) => ({
    agent: s.agent,
    conv: s.conversations,
    phase: s.phase,
    "pheby MB": mb(s.pheby.rss),
    relays: s.relays.length,
    "relays MB": mb(sum(s.relays, "rss")),
    "pheby+relays MB": mb(total(s, "rss")),
    "private MB": mb(total(s, "anon")),
    "agents (procs) MB": `${mb(sum(s.agents, "rss"))} (${s.agents.length})`,
  })),
);

const find = (agent: string, conversations: number, phase: Sample["phase"]) =>
  samples.find((s) => s.agent === agent && s.conversations === conversations && s.phase === phase)!;
console.log("\nGrowth of Pheby + relays (goal: ≤ 10 MB per added agent and per added conversation).");
const growth: Record<string, string>[] = [];
for (const agent of AGENTS.slice(1)) {
  for (const phase of ["idle", "after a turn"] as const) {
    const none = find(AGENTS[0]!.name, 1, phase);
    const one = find(agent.name, 1, phase);
    const ten = find(agent.name, 10, phase);
    const perAgent = (key: "rss" | "anon") => (total(one, key) - total(none, key)) / MB;
    const perConv = (key: "rss" | "anon") => (total(ten, key) - total(one, key)) / 9 / MB;
    const ok = (mbs: number) => (mbs <= 10 ? "ok" : "over");
    growth.push({
      agent: agent.name,
      phase,
      "per agent MB (RSS / private)": `${perAgent("rss").toFixed(1)} ${ok(perAgent("rss"))} / ${perAgent("anon").toFixed(1)} ${ok(perAgent("anon"))}`,
      "per conversation MB (RSS / private)": `${perConv("rss").toFixed(1)} ${ok(perConv("rss"))} / ${perConv("anon").toFixed(1)} ${ok(perConv("anon"))}`,
    });
  }
}
table(growth);

const relays = samples.flatMap((s) => s.relays);
const relayRss = relays.length ? sum(relays, "rss") / relays.length : Number.NaN;
const relayAnon = relays.length ? sum(relays, "anon") / relays.length : Number.NaN;
console.log("\nOne MCP process per agent MCP client, against the baselines of this run:");
table([
  { process: "bare node", "RSS MB": mb(bare.rss), "private MB": mb(bare.anon), "ratio to bare node": "1.00" },
  {
    process: "stdio MCP server on the SDK (before)",
    "RSS MB": mb(sdkServer.rss),
    "private MB": mb(sdkServer.anon),
    "ratio to bare node": (sdkServer.rss / bare.rss).toFixed(2),
  },
  {
    process: `Pheby's relay (mean of ${relays.length})`,
    "RSS MB": mb(relayRss),
    "private MB": mb(relayAnon),
    "ratio to bare node": (relayRss / bare.rss).toFixed(2),
  },
]);
console.log(
  `relay / SDK stdio server: ${(relayRss / sdkServer.rss).toFixed(2)} (RSS), ${(relayAnon / sdkServer.anon).toFixed(2)} (private)`,
);
if (relayRss > 45 * MB) {
  console.error(`the relay is over its 45 MB budget: ${mb(relayRss)} MB`);
  process.exitCode = 1;
}
