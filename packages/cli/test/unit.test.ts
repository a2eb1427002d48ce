import { PhebyError } from "@pheby/client";
import { describe, expect, it } from "vitest";
import { COMMANDS, main } from "../src/cli.js";
import { serverSettings, toWebSocketUrl } from "../src/command.js";
import { parseApprovalAnswer, parseClarifyAnswer } from "../src/commands/chat.js";
import { safeFilename } from "../src/commands/files.js";
import { EXIT, exitCodeFor, UsageError } from "../src/exit.js";
import type { Io } from "../src/io.js";
import { progressBar } from "../src/progress.js";

function memoryIo(env: NodeJS.ProcessEnv = {}) {
  let out = "";
  let err = "";
  const io = {
    stdin: process.stdin,
    stdout: {
      write(s: string) {
        out += s;
        return true;
      },
    },
    stderr: {
      write(s: string) {
        err += s;
        return true;
      },
    },
    env,
  } as unknown as Io;
  return { io, out: () => out, err: () => err };
}

describe("connection settings", () => {
  it("normalises URLs: http→ws, bare host gets /ws, other schemes are usage errors", () => {
    expect(toWebSocketUrl("http://127.0.0.1:8620")).toBe("ws://127.0.0.1:8620/ws");
    expect(toWebSocketUrl("https://pheby.example.com")).toBe("wss://pheby.example.com/ws");
    expect(toWebSocketUrl("ws://h:1/ws")).toBe("ws://h:1/ws");
    expect(() => toWebSocketUrl("ftp://h")).toThrow(UsageError);
    expect(() => toWebSocketUrl("not a url")).toThrow(UsageError);
  });

  it("flags win over PHEBY_URL / PHEBY_SECRET; a missing secret is a usage error", () => {
    const env = { PHEBY_URL: "ws://env:1/ws", PHEBY_SECRET: "from-env" };
    expect(serverSettings({}, env)).toEqual({ url: "ws://env:1/ws", secret: "from-env" });
    expect(serverSettings({ url: "ws://flag:2/ws", secret: "flag" }, env)).toEqual({
      url: "ws://flag:2/ws",
      secret: "flag",
    });
    expect(() => serverSettings({}, {})).toThrow(UsageError);
  });
});

describe("exit codes", () => {
  it("maps errors to documented codes", () => {
    expect(exitCodeFor(new UsageError("x"))).toBe(EXIT.usage);
    expect(exitCodeFor(new PhebyError("unauthorized", "x"))).toBe(EXIT.auth);
    expect(exitCodeFor(new PhebyError("rate_limited", "x"))).toBe(EXIT.auth);
    expect(exitCodeFor(new PhebyError("not_found", "x", { status: 401 }))).toBe(EXIT.auth);
    expect(exitCodeFor(new PhebyError("connection_closed", "x"))).toBe(EXIT.connection);
    expect(exitCodeFor(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } }))).toBe(
      EXIT.connection,
    );
    expect(exitCodeFor(new PhebyError("conversation_not_found", "x"))).toBe(EXIT.protocol);
    expect(exitCodeFor(Object.assign(new Error("no file"), { code: "ENOENT" }))).toBe(EXIT.usage);
  });

  it("no command or an unknown one is a usage error; unknown flags too", async () => {
    expect(await main([], memoryIo().io)).toBe(EXIT.usage);
    expect(await main(["frobnicate"], memoryIo().io)).toBe(EXIT.usage);
    const run = memoryIo({ PHEBY_SECRET: "s" });
    expect(await main(["history", "x", "--bogus"], run.io)).toBe(EXIT.usage);
    expect(run.err()).toContain("Usage: pheby history");
  });
});

describe("help", () => {
  it("every command's help shows its usage and at least one example of itself", async () => {
    for (const command of COMMANDS) {
      const run = memoryIo();
      expect(await main([command.name, "--help"], run.io)).toBe(EXIT.ok);
      expect(run.out()).toContain(`Usage: pheby ${command.name}`);
      expect(run.out()).toMatch(/Examples?:\n {2}.*pheby /);
      expect(command.examples.some((e) => e.includes(`pheby ${command.name}`))).toBe(true);
    }
  });

  it("the main help lists every command and the exit codes", async () => {
    const run = memoryIo();
    await main(["--help"], run.io);
    for (const command of COMMANDS) expect(run.out()).toContain(`  ${command.name}`);
    expect(run.out()).toContain("3 auth failure, 4 connection failure");
  });
});

describe("answers", () => {
  const choices = ["once", "session", "always", "deny"] as const;
  it("approval: a number, a name or prefix, and deny with a reason", () => {
    expect(parseApprovalAnswer("1", choices)).toEqual({ choice: "once" });
    expect(parseApprovalAnswer(" Session ", choices)).toEqual({ choice: "session" });
    expect(parseApprovalAnswer("al", choices)).toEqual({ choice: "always" });
    expect(parseApprovalAnswer("deny: too risky", choices)).toEqual({ choice: "deny", reason: "too risky" });
    expect(parseApprovalAnswer("5", choices)).toBeUndefined();
    expect(parseApprovalAnswer("", choices)).toBeUndefined();
    expect(parseApprovalAnswer("always", ["once", "deny"])).toBeUndefined();
  });

  it("clarification: a number picks a choice; other text only when free text is allowed", () => {
    const q = { choices: ["staging", "production"], allow_free_text: false };
    expect(parseClarifyAnswer("2", q)).toBe("production");
    expect(parseClarifyAnswer("staging", q)).toBe("staging");
    expect(parseClarifyAnswer("qa", q)).toBeUndefined();
    expect(parseClarifyAnswer("qa", { ...q, allow_free_text: true })).toBe("qa");
    expect(parseClarifyAnswer("3", { choices: null, allow_free_text: true })).toBe("3");
  });
});

describe("files", () => {
  it("progress bars show percent and sizes; unknown totals show bytes", () => {
    expect(progressBar("a.bin", 512, 1024, 10)).toBe("a.bin [#####.....]  50%  512 B/1.0 KiB");
    expect(progressBar("a.bin", 2048, undefined)).toBe("a.bin  2.0 KiB");
  });

  it("a server-provided name never becomes a path", () => {
    expect(safeFilename("../../etc/passwd", "id")).toBe("passwd");
    expect(safeFilename("..\\..\\x.txt", "id")).toBe("x.txt");
    expect(safeFilename("..", "id")).toBe("id");
    expect(safeFilename("a\u0000b\nc.txt", "id")).toBe("abc.txt");
    expect(safeFilename(null, "id")).toBe("id");
  });
});
