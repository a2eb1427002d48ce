import { PhebyError } from "@pheby/client";
import { describe, expect, it } from "vitest";
import { formatContent, formatPatch, formatPlan, formatTool, useColor } from "../src/activity.js";
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

describe("activity", () => {
  const patch = "--- a.ts\n+++ a.ts\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
  const ESC = "\u001b";

  it("a diff is coloured by line kind on a terminal, and plain otherwise", () => {
    expect(formatPatch(patch, false)).toEqual([
      "--- a.ts",
      "+++ a.ts",
      "@@ -1,2 +1,2 @@",
      " keep",
      "-old",
      "+new",
    ]);
    expect(formatPatch(patch, true)).toEqual([
      `${ESC}[2m--- a.ts${ESC}[0m`,
      `${ESC}[2m+++ a.ts${ESC}[0m`,
      `${ESC}[36m@@ -1,2 +1,2 @@${ESC}[0m`,
      " keep",
      `${ESC}[31m-old${ESC}[0m`,
      `${ESC}[32m+new${ESC}[0m`,
    ]);
  });

  it("the agent's text cannot drive the terminal: control characters show as ?", () => {
    expect(formatPatch(`+${ESC}[2J\tx\r`, false)).toEqual(["+?[2J\tx?"]);
    expect(formatPlan([{ content: `a${ESC}]0;title\u0007`, status: "pending", priority: "low" }])[1]).toBe(
      "  [ ] a?]0;title?",
    );
  });

  it("colour only on a terminal without NO_COLOR", () => {
    const io = (isTTY: boolean, env: NodeJS.ProcessEnv = {}) => ({ stdout: { isTTY }, env }) as unknown as Io;
    expect(useColor(io(true))).toBe(true);
    expect(useColor(io(false))).toBe(false);
    expect(useColor(io(true, { NO_COLOR: "1" }))).toBe(false);
  });

  it("content: a diff's header names the file, counts and notes; output only when asked; others by label", () => {
    const blocks = [
      {
        type: "diff" as const,
        path: null,
        display: "~/elsewhere/b.ts",
        outside: true,
        patch,
        additions: 1,
        deletions: 1,
        fragment: true,
        truncated: false,
      },
      { type: "text" as const, text: "line 1\nline 2\n", truncated: true },
      { type: "other" as const, label: "image" },
    ];
    expect(formatContent(blocks, { color: false, output: false })).toEqual([
      "diff ~/elsewhere/b.ts +1 -1 (outside the workspace, fragment)",
      ...formatPatch(patch, false),
      "[image]",
    ]);
    expect(formatContent(blocks, { color: false, output: true })).toContain(
      "output (the last 16,000 characters)",
    );
    expect(formatContent(blocks, { color: false, output: true })).toContain("line 2");
  });

  it("the plan is a checklist with a count of what is done", () => {
    expect(
      formatPlan([
        { content: "Read", status: "completed", priority: "high" },
        { content: "Fix", status: "in_progress", priority: "medium" },
        { content: "Test", status: "pending", priority: "low" },
      ]),
    ).toEqual(["Plan (1/3 done):", "  [x] Read", "  [~] Fix", "  [ ] Test"]);
  });

  it("a whole call: name, status, time and kind, title, locations, content", () => {
    const lines = formatTool(
      {
        conversation_id: "c",
        tool_call_id: "t",
        tool_name: "edit",
        status: "completed",
        duration_ms: 12,
        kind: "edit",
        title: "Edit src/a.ts",
        locations: [{ path: "src/a.ts", line: 3, outside: false }],
        content: [{ type: "text", text: "done", truncated: false }],
        ts: "2026-09-02T18:00:00.000Z",
      },
      false,
    );
    expect(lines).toEqual([
      "edit completed (12 ms) [edit]",
      "Edit src/a.ts",
      "at src/a.ts:3",
      "output",
      "done",
    ]);
  });
});
