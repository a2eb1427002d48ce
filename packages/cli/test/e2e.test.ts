// The pheby command end to end: the built CLI as a child process against the
// real apps/server, with --json on pipes and under a pseudo-terminal (`script`
// from util-linux) for the interactive paths.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serverUnavailable, startServer, type TestServer } from "../../conformance/test/server.js";

const CLI = resolve(import.meta.dirname, "../dist/main.js");
const unavailable = serverUnavailable();

interface Run {
  child: ChildProcess;
  output: () => string;
  waitFor: (text: string | RegExp, timeoutMs?: number) => Promise<void>;
  exit: Promise<number>;
}

/** Start the CLI; with `tty`, inside a pseudo-terminal via `script -q -e -c`. */
function pheby(server: TestServer, args: string[], opts: { tty?: boolean; cwd?: string } = {}): Run {
  const env = {
    PATH: process.env.PATH ?? "",
    PHEBY_URL: server.url,
    PHEBY_SECRET: server.secret,
    TERM: "dumb",
  };
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const child = opts.tty
    ? spawn("script", ["-q", "-e", "-c", quoted, "/dev/null"], { env, cwd: opts.cwd })
    : spawn(process.execPath, [CLI, ...args], { env, cwd: opts.cwd });
  let output = "";
  const waiters = new Set<() => void>();
  const onData = (d: Buffer) => {
    output += d.toString();
    for (const w of [...waiters]) w();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exit = new Promise<number>((r) => child.once("close", (code) => r(code ?? -1)));
  return {
    child,
    output: () => output,
    exit,
    waitFor: (text, timeoutMs = 20_000) =>
      new Promise<void>((resolveWait, reject) => {
        const check = () => {
          if (typeof text === "string" ? output.includes(text) : text.test(output)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolveWait();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${text} in output:\n${output}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** Run to completion; resolves with the exit code and the output. */
async function runPheby(
  server: TestServer,
  args: string[],
  opts: { tty?: boolean; cwd?: string; input?: string } = {},
) {
  const run = pheby(server, args, opts);
  run.child.stdin!.end(opts.input ?? "");
  return { code: await run.exit, output: run.output() };
}

const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe.skipIf(unavailable !== undefined)(
  `pheby against apps/server${unavailable ? ` (${unavailable})` : ""}`,
  () => {
    let server: TestServer;
    let conversation = "";

    beforeAll(async () => {
      server = await startServer();
      const created = await runPheby(server, ["conversations", "create", "CLI e2e", "--json"]);
      expect(created.code).toBe(0);
      conversation = (jsonLines(created.output)[0] as { conversation_id: string }).conversation_id;
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("conversations: create, list, rename and delete, with --json", async () => {
      const created = jsonLines(
        (await runPheby(server, ["conversations", "create", "Scratch", "--json"])).output,
      )[0]!;
      const id = created.conversation_id as string;
      expect((await runPheby(server, ["conversations", "rename", "Scratch", "Renamed", "--json"])).code).toBe(
        0,
      );
      const listed = jsonLines((await runPheby(server, ["conversations", "--json"])).output);
      expect(listed).toContainEqual(expect.objectContaining({ conversation_id: id, name: "Renamed" }));
      expect((await runPheby(server, ["conversations", "delete", id])).code).toBe(0);
      const gone = await runPheby(server, ["history", id]);
      expect(gone.code).toBe(2);
      expect(gone.output).toContain("conversation_not_found");
    });

    it("chat --json streams cumulative deltas and ends with run.finished completed", async () => {
      const { code, output } = await runPheby(server, [
        "chat",
        conversation,
        "Hello from the CLI test",
        "--json",
      ]);
      expect(code).toBe(0);
      const frames = jsonLines(output);
      const types = frames.map((f) => f.type);
      expect(types[0]).toBe("run.accepted");
      // Exactly once, before message.start (it used to be printed twice, the second after message.start).
      expect(types.filter((t) => t === "run.accepted")).toHaveLength(1);
      expect(types[1]).toBe("message.start");
      expect(types.at(-1)).toBe("run.finished");
      const deltas = frames.filter((f) => f.type === "message.delta").map((f) => f.text as string);
      expect(deltas.length).toBeGreaterThan(3);
      for (let i = 1; i < deltas.length; i++) expect(deltas[i]!.startsWith(deltas[i - 1]!)).toBe(true);
      const complete = frames.find((f) => f.type === "message.complete")!;
      expect(complete.text).toContain("Hello from the CLI test");
      expect(frames.at(-1)).toMatchObject({ status: "completed" });
    });

    it("chat on a terminal streams the answer in place with compact tool lines", async () => {
      const { code, output } = await runPheby(server, ["chat", "CLI e2e", "/sim tools"], { tty: true });
      expect(code).toBe(0);
      expect(output).toMatch(/✓ web_search completed \(\d+ ms\)/);
      expect(output).toContain("✗ read_file failed");
      expect(output).toContain("[REDACTED]");
      expect(output).toContain("I ran two tools: web_search completed and read_file failed.");
    });

    it("Ctrl-C cancels the run without exiting; Ctrl-D then exits 0 (under a pseudo-terminal)", async () => {
      const run = pheby(server, ["chat", conversation], { tty: true });
      await run.waitFor("you> ");
      run.child.stdin!.write("/sim slow\r");
      await run.waitFor("word3 ");
      run.child.stdin!.write("\x03");
      await run.waitFor("[run cancelled]");
      await run.waitFor(/\[run cancelled\][\s\S]*you> /);
      expect(run.child.exitCode).toBeNull();
      run.child.stdin!.write("\x04");
      expect(await run.exit).toBe(0);
      const history = jsonLines((await runPheby(server, ["history", conversation, "--json"])).output)[0]!;
      expect((history.messages as { text: string }[]).some((m) => m.text === "/sim slow")).toBe(true);
    });

    it("an approval is asked with its choices and answered interactively (pseudo-terminal)", async () => {
      const run = pheby(server, ["chat", conversation, "/sim approval"], { tty: true });
      await run.waitFor("approve> ");
      expect(run.output()).toMatch(/\[1\] once/);
      run.child.stdin!.write("1\r");
      expect(await run.exit).toBe(0);
    });

    it("upload and download round-trip byte for byte, with plain progress lines off a terminal", async () => {
      const dir = mkdtempSync(join(tmpdir(), "pheby-cli-files-"));
      try {
        const bytes = randomBytes(3 * 1024 * 1024 + 17);
        writeFileSync(join(dir, "data.bin"), bytes);
        const up = await runPheby(server, ["upload", conversation, join(dir, "data.bin"), "--json"]);
        expect(up.code).toBe(0);
        expect(up.output).toContain("(100%)");
        const attachment = jsonLines(up.output)[0] as { attachment_id: string; size: number };
        expect(attachment.size).toBe(bytes.length);
        const down = await runPheby(server, [
          "download",
          attachment.attachment_id,
          "-o",
          join(dir, "copy.bin"),
        ]);
        expect(down.code).toBe(0);
        expect(readFileSync(join(dir, "copy.bin")).equals(bytes)).toBe(true);
        const named = await runPheby(server, ["download", attachment.attachment_id, "--json"], { cwd: dir });
        expect(readFileSync(join(dir, "data.bin")).equals(bytes)).toBe(true);
        expect(jsonLines(named.output)[0]).toMatchObject({ path: "data.bin", size: bytes.length });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("exit codes: 3 for a wrong secret, 4 for no server, 1 for usage, 2 for a protocol error", async () => {
      expect((await runPheby(server, ["conversations", "--secret", "wrong-secret-for-the-test"])).code).toBe(
        3,
      );
      expect((await runPheby(server, ["conversations", "--url", "ws://127.0.0.1:1/ws"])).code).toBe(4);
      expect((await runPheby(server, ["chat"])).code).toBe(1);
      expect((await runPheby(server, ["chat", conversation, "/sim fail"])).code).toBe(5);
      expect((await runPheby(server, ["history", "0123456789abcdef0123456789abcdef"])).code).toBe(2);
    });

    it("pheby conformance passes against the server and writes JUnit", async () => {
      const dir = mkdtempSync(join(tmpdir(), "pheby-cli-junit-"));
      try {
        const args = [
          "conformance",
          "--no-auth-failures",
          "--junit",
          join(dir, "report.xml"),
          "--only",
          "runs.*",
          "--only",
          "conversations.*",
        ];
        const { code, output } = await runPheby(server, args);
        expect(output).toContain("PASS  runs.lifecycle");
        expect(code).toBe(0);
        expect(readFileSync(join(dir, "report.xml"), "utf8")).toContain('failures="0"');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
