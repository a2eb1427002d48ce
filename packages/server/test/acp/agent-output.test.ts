/**
 * What an agent emits is untrusted: a `MEDIA:` line or `send_file` naming a FIFO inside an allowed
 * root must not block the server (a FIFO opened for reading waits for a writer), and the agent's
 * stderr, where agents print prompts, is chat content in the logs.
 */
import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_SCHEDULES } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import type { AcpBackendOptions } from "../../src/agent/acp/index.js";
import { captureLogs } from "../helpers.js";
import { FAKE_AGENT_COMMAND, fakeAgentDir } from "./harness.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "./pheby.js";

type FakeAgent = ReturnType<typeof fakeAgentDir>;

function agentOptions(fake: FakeAgent): AcpBackendOptions {
  return {
    command: FAKE_AGENT_COMMAND,
    cwd: fake.dir,
    env: fake.env,
    allowedFileRoots: [fake.dir],
    requestTimeoutMs: 15_000,
  };
}

const started: PhebyAcp[] = [];
const fifos: string[] = [];
afterEach(async () => {
  for (const p of started.splice(0)) await p.close();
  // On code that opens the FIFO blocking, a writer releases the thread-pool worker it holds.
  for (const fifo of fifos.splice(0)) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // no reader: nothing is blocked on it
    }
  }
});

/** A FIFO (named pipe) inside the fake agent's directory, an allowed file root. */
function fifoIn(fake: FakeAgent): string {
  mkdirSync(join(fake.dir, "out"), { recursive: true });
  const path = join(fake.dir, "out", "pipe.txt");
  execFileSync("mkfifo", [path]);
  fifos.push(path);
  return path;
}

describe("a FIFO named by the agent", () => {
  it("a MEDIA: line naming a FIFO inside an allowed root: the run completes, the file is refused and logged", async () => {
    const fake = fakeAgentDir();
    const log = captureLogs("warn");
    const p = await startPhebyAcp(agentOptions(fake), { allowedFileRoots: [fake.dir], logger: log.logger });
    started.push(p);
    const fifo = fifoIn(fake);
    const id = await p.create();
    const run = await p.chat(id, `media ${fifo}`, 20_000);
    expect(run.finished.status).toBe("completed");
    expect(run.complete.text).toBe("Result:\nDone. MEDIA:not-a-line");
    expect(framesOf(p.frames, "attachment.added")).toEqual([]);
    expect(log.text()).toContain("produced file refused: not a regular file");
  });

  it("send_file naming a FIFO: the agent is told the file was not sent, and the run completes", async () => {
    const fake = fakeAgentDir();
    const p = await startPhebyAcp(agentOptions(fake), {
      allowedFileRoots: [fake.dir],
      features: [FEATURE_SCHEDULES],
    });
    started.push(p);
    const fifo = fifoIn(fake);
    const id = await p.create();
    const run = await p.chat(id, `mcp send_file {"path":"${fifo}"}`, 20_000);
    expect(run.finished.status).toBe("completed");
    expect(run.complete.text).toMatch(
      /^send_file -> error: Pheby did not send the file: it must be a regular file/,
    );
    expect(framesOf(p.frames, "attachment.added")).toEqual([]);
  });
});

describe("the agent's stderr in the logs", () => {
  const MARKER = "PROMPT-MARKER-7f3a9c";

  async function stderrLog(logChatContent: boolean): Promise<string> {
    const fake = fakeAgentDir();
    const log = captureLogs("debug");
    const p = await startPhebyAcp(agentOptions(fake), { logger: log.logger, logChatContent });
    started.push(p);
    const id = await p.create();
    const run = await p.chat(id, `stderr the user asked ${MARKER}`, 20_000);
    expect(run.complete.text).toBe("wrote to stderr");
    // The stderr line may be read just after the turn's answer: wait for its log entry.
    await expect.poll(() => log.text().includes('"msg":"agent stderr"'), { timeout: 10_000 }).toBe(true);
    return log.text();
  }

  it("is chat content: only its length is logged while chat content logging is off", async () => {
    const text = await stderrLog(false);
    expect(text).not.toContain(MARKER);
    const line = `the user asked ${MARKER}`;
    expect(text).toContain(`"agentStderrChars":${line.length}`);
  });

  it("is logged verbatim when the operator enabled chat content logging", async () => {
    const text = await stderrLog(true);
    expect(text).toContain(MARKER);
  });
});
