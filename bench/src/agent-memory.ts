// What each agent costs Pheby in memory and processes. For each agent, one real @pheby/server in a
// child process (agent-memory-server.mjs, plain node), grown in place: before any conversation, then
// 1, 3 and 10 conversations, idle (sessions open, no turn) and after one turn each (a call of Pheby's
// `schedule_list` tool over MCP). Measured: the resident memory (VmRSS from /proc/<pid>/status,
// summed) of Pheby's process plus every Pheby MCP relay process (`dist/mcp.js`) under it, apart from
// the agents' own processes, reported beside it; RssAnon (the private part of RSS: Node's binary is
// mapped shared by every Node process) too. The agents are the scripted ACP agent of @pheby/server's
// tests (through tsx, which its own figure includes) as real child processes: one declaring
// `mcpCapabilities.http` (an MCP client per session, as Codex), one without it (a relay per session),
// one without it sharing one MCP client per process (as Hermes); "no agent" is the simulator.
// Baselines in the same run: a bare Node.js process, and a stdio MCP server on the MCP SDK with six
// tools (the shape of what Pheby launched per agent process before the relay). Exits 1 when a relay
// is over its 45 MB budget.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BenchClient, SECRET } from "./client.js";
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
const sum = (ps: Proc[], key: "rss" | "anon") => ps.reduce((a, p) => a + p[key], 0);

interface Sample {
  agent: string;
  conversations: number;
  phase: "before any" | "idle" | "after a turn";
  pheby: Proc;
  relays: Proc[];
  agents: Proc[];
}

/**
 * One Pheby for `agent`, grown in place: before any conversation (the library starts the agent on
 * first need), then 1, 3 and 10 conversations, each time idle (the new ones' sessions open, no turn
 * yet) and after one turn of each new one.
 */
async function measureAgent(agent: Agent): Promise<Sample[]> {
  const dir = mkdtempSync(join(tmpdir(), "pheby-bench-agent-"));
  const server = await spawnServer("./agent-memory-server.mjs", {
    BENCH_SECRET: SECRET,
    ...(agent.env
      ? {
          BENCH_AGENT_COMMAND: JSON.stringify([process.execPath, "--import", tsx, fakeAgent]),
          BENCH_AGENT_ENV: JSON.stringify({ FAKE_STATE: join(dir, "state.json"), ...agent.env }),
          BENCH_AGENT_CWD: dir,
        }
      : {}),
  });
  const client = await BenchClient.connect(server.port, false);
  const samples: Sample[] = [];
  const conversations: string[] = [];
  const sample = async (phase: Sample["phase"]) => {
    await new Promise((r) => setTimeout(r, 500)); // let exiting or starting processes settle
    const under = descendants(server.child.pid!);
    samples.push({
      agent: agent.name,
      conversations: conversations.length,
      phase,
      pheby: proc(server.child.pid!)!,
      relays: under.filter(isRelay),
      agents: under.filter((p) => !isRelay(p)),
    });
  };
  await sample("before any");
  for (const count of COUNTS) {
    const added: string[] = [];
    while (conversations.length < count) {
      const created = await client.request({ type: "conversation.create" }, "conversation.created");
      conversations.push(created.conversation_id!);
      added.push(created.conversation_id!);
    }
    await sample("idle");
    for (const conversation_id of added) {
      const accepted = await client.request(
        { type: "chat.send", conversation_id, text: agent.env ? "mcp schedule_list" : "hello" },
        "run.accepted",
      );
      const finished = await client.next((f) => f.type === "run.finished" && f.run_id === accepted.run_id);
      if (finished.status !== "completed")
        throw new Error(`a turn of ${agent.name} ended ${finished.status}`);
    }
    await sample("after a turn");
  }
  client.close();
  await server.stop();
  return samples;
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
for (const agent of AGENTS) samples.push(...(await measureAgent(agent)));

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
console.log(
  "\nGrowth of Pheby + relays (goal: ≤ 10 MB per added agent and per added conversation): the agent's\n" +
    "first conversation after its turn against the same Pheby before any, and (10 − 1 conversations) / 9.",
);
const growth: Record<string, string>[] = [];
for (const agent of AGENTS) {
  const before = find(agent.name, 0, "before any");
  const one = find(agent.name, 1, "after a turn");
  const ten = find(agent.name, 10, "after a turn");
  const perAgent = (key: "rss" | "anon") => (total(one, key) - total(before, key)) / MB;
  const perConv = (key: "rss" | "anon") => (total(ten, key) - total(one, key)) / 9 / MB;
  const cell = (mbs: number) => `${mbs.toFixed(1)} ${mbs <= 10 ? "ok" : "over"}`;
  growth.push({
    agent: agent.name,
    "per agent MB, RSS": cell(perAgent("rss")),
    private: cell(perAgent("anon")),
    "per conversation MB, RSS": cell(perConv("rss")),
    "private ": cell(perConv("anon")),
  });
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
