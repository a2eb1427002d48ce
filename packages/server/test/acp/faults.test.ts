/**
 * Agent faults never strand a conversation: a real Pheby server with the ACP backend,
 * the scripted fake agent as a real child process that is killed, exits mid-turn, hangs, prints
 * garbage, cannot start for a while, or forgets its sessions, driven through `@pheby/client`.
 *
 * For every fault: each run ends with exactly one `run.finished`, the next turn completes, and no
 * message is lost, with an agent that can reopen sessions (`session/load`) and with one that can
 * reopen nothing (neither `session/load` nor `session/resume`). Every frame is validated against
 * `@pheby/protocol` (test/setup.ts).
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ServerMessageOf } from "@pheby/protocol";
import { messageIdOf } from "@pheby/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { tempDir } from "../helpers.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";
import { framesOf, type PhebyAcp, type RunOutcome, startPhebyAcp } from "./pheby.js";

type FakeAgent = ReturnType<typeof fakeAgentDir>;

/** What the fake agent advertises: `FAKE_CAPS`, merged over its defaults. */
const CAN_LOAD = { loadSession: true, sessionCapabilities: { list: {} } };
const CAN_RESUME = { loadSession: false, sessionCapabilities: { list: {}, resume: {} } };
const CANNOT_REOPEN = { loadSession: false, sessionCapabilities: { list: {} } };

const AGENTS = [
  ["an agent with session/load", CAN_LOAD],
  ["an agent with neither session/load nor session/resume", CANNOT_REOPEN],
] as const;

/** The notice a conversation gets when it continues in a new agent session. */
const RESTARTED = /the agent restarted; it continues from a summary of this conversation/i;

const servers: PhebyAcp[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function options(fake: FakeAgent, caps: object, extra: Partial<AcpBackendOptions> = {}): AcpBackendOptions {
  return {
    command: FAKE_AGENT_COMMAND,
    cwd: fake.dir,
    allowedFileRoots: [fake.dir],
    respawnBackoffMs: 10,
    ...extra,
    env: { ...fake.env, FAKE_CAPS: JSON.stringify(caps), ...extra.env },
  };
}

async function start(
  fake: FakeAgent,
  caps: object,
  extra: Partial<AcpBackendOptions> = {},
  server: Parameters<typeof startPhebyAcp>[1] = {},
): Promise<PhebyAcp> {
  const p = await startPhebyAcp(options(fake, caps, extra), server);
  servers.push(p);
  return p;
}

/** The pid of the agent process that answered the latest `initialize`. */
function agentPid(fake: FakeAgent): number {
  const pid = fake.calls("initialize").at(-1)?.pid;
  if (typeof pid !== "number") throw new Error("the fake agent has not started");
  return pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Start a run and return its ID once the agent has streamed `seen`. */
async function running(p: PhebyAcp, id: string, text: string, seen: string): Promise<string> {
  const { run_id } = await p.client.request({ type: "chat.send", conversation_id: id, text });
  await p.waitFor(
    "message.delta",
    (m) => m.message_id === messageIdOf(p.frames, run_id) && m.text.includes(seen),
  );
  return run_id;
}

/** Exactly one `run.finished` for every run the client saw accepted. */
function expectOneFinishedPerRun(p: PhebyAcp): void {
  const accepted = framesOf(p.frames, "run.accepted").map((m) => m.run_id);
  const finished = framesOf(p.frames, "run.finished").map((m) => m.run_id);
  expect(finished.sort()).toEqual([...new Set(accepted)].sort());
}

function notices(run: RunOutcome): string[] {
  return framesOf(run.frames, "message.complete")
    .filter((m) => m.kind === "notice")
    .map((m) => m.text);
}

async function sessionOf(p: PhebyAcp, id: string): Promise<string | null | undefined> {
  const { conversations } = await p.client.request({ type: "conversation.list" });
  return conversations.find((c) => c.conversation_id === id)?.session_id;
}

async function history(p: PhebyAcp, id: string): Promise<string[]> {
  const open = await p.client.request({ type: "conversation.open", conversation_id: id });
  return open.messages.map((m) => `${m.role}: ${m.text}`);
}

/** The content of the agent's latest `session/prompt`, as one string. */
function lastPrompt(fake: FakeAgent): string {
  return JSON.stringify(fake.calls("session/prompt").at(-1)?.params.prompt);
}

/**
 * A turn after the agent lost the conversation's session: it completes in whatever session the
 * backend could give it. Where the agent could not reopen the old one, it is a new session that got
 * the conversation so far as context, and the owner a notice.
 */
async function expectNextTurnCompletes(
  p: PhebyAcp,
  fake: FakeAgent,
  id: string,
  text: string,
  reopened: boolean,
  earlier: string[],
): Promise<RunOutcome> {
  const before = await sessionOf(p, id);
  const run = await p.chat(id, text);
  expect(run.finished).toMatchObject({ status: "completed" });
  expect(run.complete.text).toBe(`echo: ${text}`);
  if (reopened) {
    expect(notices(run).filter((n) => RESTARTED.test(n))).toEqual([]);
    expect(await sessionOf(p, id)).toBe(before);
  } else {
    expect(notices(run)).toEqual([expect.stringMatching(RESTARTED)]);
    expect(await sessionOf(p, id)).not.toBe(before);
    for (const said of earlier) expect(lastPrompt(fake)).toContain(said);
  }
  return run;
}

describe.each(AGENTS)("agent faults with %s", (_name, caps) => {
  const reopens = caps.loadSession;

  it("killed 6 times mid-run: each run fails once, the next turn completes, nothing is lost", async () => {
    const fake = fakeAgentDir();
    const p = await start(fake, caps);
    const id = await p.create();
    expect((await p.chat(id, "first words")).finished.status).toBe("completed");
    for (let i = 0; i < 6; i++) {
      const runId = await running(p, id, "slow", "tick 1");
      const pid = agentPid(fake);
      process.kill(pid, "SIGKILL");
      const finished = await p.waitFor("run.finished", (m) => m.run_id === runId);
      expect(finished).toMatchObject({
        status: "failed",
        error: "the agent process exited unexpectedly (signal SIGKILL)",
      });
      await expectNextTurnCompletes(p, fake, id, `after kill ${i}`, reopens, ["first words"]);
      expect(agentPid(fake)).not.toBe(pid);
    }
    expectOneFinishedPerRun(p);
    const said = await history(p, id);
    expect(said).toHaveLength(2 + 6 * 4);
    expect(said.filter((m) => m.startsWith("user: "))).toEqual([
      "user: first words",
      ...[0, 1, 2, 3, 4, 5].flatMap((i) => ["user: slow", `user: after kill ${i}`]),
    ]);
  });

  it("an agent that exits mid-turn: the run fails clearly once, the next turn completes", async () => {
    const fake = fakeAgentDir();
    const p = await start(fake, caps);
    const id = await p.create();
    await p.chat(id, "remember this");
    const crashed = await p.chat(id, "crash");
    expect(crashed.finished).toMatchObject({
      status: "failed",
      error: "the agent process exited unexpectedly (exit code 3)",
    });
    await expectNextTurnCompletes(p, fake, id, "still here", reopens, ["remember this", "about to crash"]);
    expectOneFinishedPerRun(p);
  });

  it("garbage on the agent's stdout is skipped: the run and the next one complete", async () => {
    const fake = fakeAgentDir();
    const p = await start(fake, caps, { env: { FAKE_BANNER: "Hermes v0 starting (not JSON)" } });
    const id = await p.create();
    const run = await p.chat(id, "garbage");
    expect(run.finished).toMatchObject({ status: "completed" });
    expect(run.complete.text).toBe("before after");
    expect((await p.chat(id, "next")).complete.text).toBe("echo: next");
    expect(fake.calls("initialize")).toHaveLength(1); // nothing was restarted
    expectOneFinishedPerRun(p);
  });

  it("an agent that cannot start for a while: runs fail fast and once, then the conversation continues", async () => {
    const fake = fakeAgentDir();
    const refuse = join(fake.dir, "refuse");
    const p = await start(fake, caps, { env: { FAKE_REFUSE: refuse } });
    const id = await p.create();
    await p.chat(id, "before the outage");
    writeFileSync(refuse, "");
    process.kill(agentPid(fake), "SIGKILL");
    for (let i = 0; i < 3; i++) {
      const down = await p.chat(id, `during the outage ${i}`);
      // The first may still reach the killed process before its exit is seen.
      expect(down.finished).toMatchObject({
        status: "failed",
        error: expect.stringMatching(/^the agent (failed to initialize|process exited unexpectedly)/),
      });
    }
    rmSync(refuse);
    await expectNextTurnCompletes(p, fake, id, "after the outage", reopens, [
      "before the outage",
      "during the outage 2",
    ]);
    expectOneFinishedPerRun(p);
  });

  it("a hung agent cancelled: one run.finished cancelled, and the next turn is not held back by the request timeout", async () => {
    const fake = fakeAgentDir();
    // The request timeout (which used to bound the wait for a hung turn) is far beyond the test's.
    const p = await start(fake, caps, { requestTimeoutMs: 600_000 }, { cancelGraceMs: 300 });
    const id = await p.create();
    await p.chat(id, "before the hang");
    const runId = await running(p, id, "hang", "hanging");
    const cancelled = await p.client.request({ type: "run.cancel", conversation_id: id, run_id: runId });
    expect(cancelled).toMatchObject({ status: "cancelled" });
    const next = await p.chat(id, "after the hang", 30_000);
    expect(next.finished).toMatchObject({ status: "completed" });
    expect(next.complete.text).toBe("echo: after the hang");
    expectOneFinishedPerRun(p);
    expect(await history(p, id)).toEqual([
      "user: before the hang",
      "assistant: echo: before the hang",
      "user: hang",
      "assistant: hanging",
      "user: after the hang",
      "assistant: echo: after the hang",
    ]);
  });
});

describe("a session the agent cannot reopen", () => {
  it("a restart of pheby-server: an agent without load or resume continues from a summary", async () => {
    const fake = fakeAgentDir();
    const dataDir = tempDir();
    const first = await start(fake, CANNOT_REOPEN, {}, { dataDir });
    const id = await first.create();
    await first.chat(id, "kept across the restart");
    first.client.close();
    await first.ts.close();
    const second = await start(fake, CANNOT_REOPEN, {}, { dataDir });
    await expectNextTurnCompletes(second, fake, id, "after the restart", false, [
      "kept across the restart",
      "echo: kept across the restart",
    ]);
    const again = await second.chat(id, "and then");
    expect(notices(again)).toEqual([]); // the new session is open now
  });

  it("an agent that forgets its sessions on restart: session/resume answers not found, a new session continues", async () => {
    const fake = fakeAgentDir();
    const p = await start(fake, CAN_RESUME, { env: { FAKE_AMNESIA: "1" } });
    const id = await p.create();
    await p.chat(id, "do not forget me");
    process.kill(agentPid(fake), "SIGKILL");
    await expectNextTurnCompletes(p, fake, id, "who am I", false, ["do not forget me"]);
    expect(fake.calls("session/resume")).toHaveLength(1);
  });

  it("an agent that loses a session while running: the prompt's not found becomes a new session", async () => {
    const fake = fakeAgentDir();
    const p = await start(fake, CAN_LOAD);
    const id = await p.create();
    const forgot = await p.chat(id, "forget");
    expect(forgot.finished.status).toBe("completed");
    await expectNextTurnCompletes(p, fake, id, "are you there", false, ["forget", "forgetting"]);
    expect(fake.calls("initialize")).toHaveLength(1); // the process lives on
  });

  it("the context is bounded: the newest messages are kept, the oldest left out", async () => {
    const fake = fakeAgentDir();
    const p = await start(fake, CANNOT_REOPEN);
    const id = await p.create();
    const long = "x".repeat(9_000);
    for (let i = 0; i < 6; i++) await p.chat(id, `message ${i} ${long}`);
    process.kill(agentPid(fake), "SIGKILL");
    await expectNextTurnCompletes(p, fake, id, "what did I say", false, ["message 5"]);
    const context = lastPrompt(fake);
    expect(context).not.toContain("message 0");
    expect(context.length).toBeLessThan(6 * 2 * 9_000);
  });
});

describe("cancel on a hung agent beside another conversation", () => {
  it("the hung conversation continues in a new session; the other conversation's run completes; the agent restarts once idle", async () => {
    const fake = fakeAgentDir();
    const p = await start(
      fake,
      CAN_LOAD,
      { requestTimeoutMs: 600_000, cancelTimeoutMs: 1_000 },
      { cancelGraceMs: 300 },
    );
    const hung = await p.create();
    const busy = await p.create();
    await p.chat(hung, "hello");
    const pid = agentPid(fake);
    const busyRun = await running(p, busy, "sleep 6000", "sleeping");
    const hangRun = await running(p, hung, "hang", "hanging");
    await p.client.request({ type: "run.cancel", conversation_id: hung, run_id: hangRun });
    const next = await expectNextTurnCompletes(p, fake, hung, "unstuck", false, ["hello", "hanging"]);
    // The other conversation's run was not hurt: still running on the same agent process.
    expect(framesOf(p.frames, "run.finished").some((m) => m.run_id === busyRun)).toBe(false);
    expect(agentPid(fake)).toBe(pid);
    const busyDone: ServerMessageOf<"run.finished"> = await p.waitFor(
      "run.finished",
      (m) => m.run_id === busyRun,
    );
    expect(busyDone.status).toBe("completed");
    expect(p.frames.indexOf(next.finished)).toBeLessThan(p.frames.indexOf(busyDone));
    // With no run left, the agent holding the stuck turn is restarted.
    while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
    expect((await p.chat(busy, "after restart")).finished.status).toBe("completed");
    expect((await p.chat(hung, "after restart too")).finished.status).toBe("completed");
    expectOneFinishedPerRun(p);
  });
});
