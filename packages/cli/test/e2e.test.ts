// The pheby command end to end: the built CLI as a child process against the
// real apps/server, with --json on pipes and under a pseudo-terminal (`script`
// from util-linux) for the interactive paths.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PhebyClient, pairDevice } from "@pheby/client";
import { AttachmentDescriptor, type ServerMessage } from "@pheby/protocol";
import { answerOf } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusingUpgrades } from "../../client/test/peer.js";
import { startReceiver } from "../../conformance/src/push-receiver.js";
import { serverUnavailable, startServer, type TestServer } from "../../conformance/test/server.js";
import { decode, gridOf } from "./qr-decode.js";

const CLI = resolve(import.meta.dirname, "../dist/main.js");
const unavailable = serverUnavailable();

interface Run {
  child: ChildProcess;
  output: () => string;
  waitFor: (text: string | RegExp, timeoutMs?: number) => Promise<void>;
  exit: Promise<number>;
}

/** Start the CLI; with `tty`, inside a pseudo-terminal via `script -q -e -c`. */
function pheby(
  server: TestServer,
  args: string[],
  opts: { tty?: boolean; cwd?: string; secret?: string } = {},
): Run {
  const env = {
    PATH: process.env.PATH ?? "",
    PHEBY_URL: server.url,
    PHEBY_SECRET: opts.secret ?? server.secret,
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
  opts: { tty?: boolean; cwd?: string; input?: string; secret?: string } = {},
) {
  const run = pheby(server, args, opts);
  run.child.stdin!.end(opts.input ?? "");
  return { code: await run.exit, output: run.output() };
}

/** A port on 127.0.0.1 that nothing listens on (it was just released), so connecting is refused. */
async function freePort(): Promise<number> {
  const server = await refusingUpgrades(200);
  await server.close();
  return server.port;
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

    it("schedule: add (cron and at), list as text and --json, rm; a bad cron is the server's words, exit 2", async () => {
      const cron = await runPheby(server, [
        "schedule",
        "add",
        "CLI e2e",
        "--cron",
        "0 8 * * 1-5",
        "--timezone",
        "Europe/Paris",
        "--name",
        "Inbox",
        "Summarise my inbox",
        "--json",
      ]);
      expect(cron.code).toBe(0);
      const made = jsonLines(cron.output)[0]!;
      expect(made).toMatchObject({
        conversation_id: conversation,
        name: "Inbox",
        prompt: "Summarise my inbox",
        cron: "0 8 * * 1-5",
        timezone: "Europe/Paris",
        enabled: true,
      });
      const at = new Date(Date.now() + 3_600_000).toISOString();
      const once = await runPheby(server, ["schedule", "add", conversation, "--at", at, "Remind me"]);
      expect(once.code).toBe(0);
      expect(once.output).toMatch(/^[0-9a-f]{32} {2}\S+ {2}at \S+ {2}Remind me\n$/);
      const text = await runPheby(server, ["schedule", "list", "CLI e2e"]);
      expect(text.output).toContain(`${made.schedule_id as string}  `);
      expect(text.output).toContain('cron "0 8 * * 1-5" Europe/Paris  Inbox');
      const listed = jsonLines((await runPheby(server, ["schedule", "--json"])).output);
      expect(listed.map((s) => s.name)).toEqual(expect.arrayContaining(["Inbox", null]));
      const bad = await runPheby(server, ["schedule", "add", conversation, "--cron", "61 * * * *", "p"]);
      expect(bad.code).toBe(2);
      expect(bad.output).toContain("bad_request: cron is not a valid expression (Invalid value for minute)");
      const usage = await runPheby(server, ["schedule", "add", conversation, "p"]);
      expect(usage.code).toBe(1);
      expect(usage.output).toContain("give either --cron or --at");
      expect(made).toMatchObject({ created_by: "user", confirmed: true, auto_approve: false });
      // The owner (the master secret) may let YOLO approve a schedule's runs; the list says so.
      const auto = await runPheby(server, [
        "schedule",
        "add",
        conversation,
        "--cron",
        "0 2 * * *",
        "--auto-approve",
        "Nightly",
      ]);
      expect(auto).toMatchObject({
        code: 0,
        output: expect.stringMatching(/ {2}Nightly {2}\[auto-approve\]\n$/),
      });
      const confirmed = await runPheby(server, ["schedule", "confirm", made.schedule_id as string, "--json"]);
      expect(confirmed.code).toBe(0);
      expect(jsonLines(confirmed.output)[0]).toMatchObject({
        schedule_id: made.schedule_id,
        enabled: true,
        confirmed: true,
      });
      const removed = await runPheby(server, ["schedule", "rm", made.schedule_id as string]);
      expect(removed).toMatchObject({ code: 0, output: `deleted ${made.schedule_id as string}\n` });
      const missing = await runPheby(server, ["schedule", "rm", made.schedule_id as string]);
      expect(missing.code).toBe(2);
      expect(missing.output).toContain("not_found");
    });

    it("modes lists and switches the agent's modes, commands lists its /sim commands, chat --mode switches first", async () => {
      type Mode = { mode_id: string; name: string; description: string | null; auto_approves: boolean };
      const listed = await runPheby(server, ["modes", "CLI e2e", "--json"]);
      expect(listed.code).toBe(0);
      const snapshot = jsonLines(listed.output)[0] as { modes: Mode[]; current_mode_id: string | null };
      expect(snapshot).toMatchObject({ conversation_id: conversation });
      expect(snapshot.modes.length).toBeGreaterThan(1);
      const [start, target] = snapshot.modes.filter((m) => !m.auto_approves) as [Mode, Mode];
      expect(target).toBeDefined();

      // As text: one line per mode, * on the current one, [auto-approves] on those that do.
      const text = await runPheby(server, ["modes", "CLI e2e"]);
      expect(text.code).toBe(0);
      const lines = text.output.trimEnd().split("\n");
      expect(lines).toHaveLength(snapshot.modes.length);
      for (const [i, m] of snapshot.modes.entries()) {
        expect(
          lines[i]!.startsWith(`${m.mode_id === snapshot.current_mode_id ? "*" : " "} ${m.mode_id} `),
        ).toBe(true);
        expect(lines[i]).toContain(m.name);
        expect(lines[i]!.endsWith("[auto-approves]")).toBe(m.auto_approves);
      }

      const set = await runPheby(server, ["modes", conversation, target.mode_id]);
      expect(set).toEqual({ code: 0, output: `mode: ${target.mode_id}\n` });
      const after = jsonLines((await runPheby(server, ["modes", "CLI e2e", "--json"])).output)[0]!;
      expect(after.current_mode_id).toBe(target.mode_id);
      expect(
        jsonLines((await runPheby(server, ["modes", conversation, start.mode_id, "--json"])).output),
      ).toEqual([{ conversation_id: conversation, mode_id: start.mode_id }]);

      // A mode the agent does not offer is the server's bad_request: exit 2.
      const unknown = await runPheby(server, ["modes", conversation, "no-such-mode"]);
      expect(unknown.code).toBe(2);
      expect(unknown.output).toContain("bad_request");

      const commandLines = jsonLines((await runPheby(server, ["commands", "CLI e2e", "--json"])).output);
      expect(commandLines.length).toBeGreaterThan(0);
      for (const c of commandLines) {
        expect(Object.keys(c).sort()).toEqual(["description", "hint", "name"]);
        expect(c.name as string).toMatch(/^sim/);
      }
      const commandText = await runPheby(server, ["commands", conversation]);
      expect(commandText.code).toBe(0);
      expect(commandText.output.trimEnd().split("\n")).toHaveLength(commandLines.length);
      for (const c of commandLines) expect(commandText.output).toContain(`/${c.name as string}`);

      // chat --mode: the mode changes before the message is sent, so its run is in that mode.
      const watcher = new PhebyClient({ url: server.url, secret: server.secret, reconnect: false });
      await watcher.connect();
      try {
        const seen: string[] = [];
        watcher.on("*", (m) => {
          if ((m as { conversation_id?: string }).conversation_id === conversation) seen.push(m.type);
        });
        const finished = watcher.next("run.finished", (m) => m.conversation_id === conversation);
        const chatted = pheby(server, [
          "chat",
          "CLI e2e",
          "Hello in a mode",
          "--mode",
          target.mode_id,
          "--json",
        ]);
        chatted.child.stdin!.end();
        expect(await chatted.exit).toBe(0);
        expect(chatted.output()).toContain(`[mode: ${target.mode_id}]`);
        await finished;
        expect(seen.indexOf("mode.changed")).toBeGreaterThanOrEqual(0);
        expect(seen.indexOf("mode.changed")).toBeLessThan(seen.indexOf("run.accepted"));
        expect(
          jsonLines((await runPheby(server, ["modes", conversation, "--json"])).output)[0],
        ).toMatchObject({
          current_mode_id: target.mode_id,
        });
      } finally {
        watcher.close();
      }
      // The agent leaving that mode by itself during a chat is printed where it happened.
      const left = await runPheby(server, ["chat", conversation, "/sim mode leave"]);
      expect(left.code).toBe(0);
      expect(left.output).toContain(`[mode: ${start.mode_id}]\nI left the ${target.mode_id} mode by myself`);
      const bad = await runPheby(server, ["chat", conversation, "Not sent", "--mode", "no-such-mode"]);
      expect(bad.code).toBe(2);
      expect(bad.output).toContain("bad_request");
      const history = jsonLines((await runPheby(server, ["history", conversation, "--json"])).output)[0]!;
      expect((history.messages as { text: string }[]).some((m) => m.text === "Not sent")).toBe(false);
      // Back to where the other tests expect it.
      expect((await runPheby(server, ["modes", conversation, start.mode_id])).code).toBe(0);
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

    it("chat --queue during another run waits its turn, then streams its own run to the end", async () => {
      const slow = pheby(server, ["chat", conversation, "/sim slow"]);
      await slow.waitFor("word2 ");
      const queued = pheby(server, ["chat", conversation, "And then?", "--queue", "--json"]);
      await queued.waitFor('"type":"run.queued"');
      // Without --queue the same send is refused while the run is active.
      const refused = await runPheby(server, ["chat", conversation, "Now!"]);
      expect(refused.code).toBe(2);
      expect(refused.output).toContain("run_active");
      slow.child.kill("SIGINT"); // Ctrl-C cancels the slow run: the queued one starts
      expect(await queued.exit).toBe(0);
      const frames = jsonLines(queued.output());
      const runId = frames.find((f) => f.type === "run.queued")!.run_id;
      const ofRun = frames.filter((f) => f.run_id === runId).map((f) => f.type);
      expect(ofRun).toEqual(["run.queued", "run.accepted", "message.start", "run.finished"]);
      expect(frames.at(-1)).toMatchObject({ type: "run.finished", run_id: runId, status: "completed" });
      expect(answerOf(frames as unknown as ServerMessage[], runId as string)!.text).toContain("And then?");
      await slow.exit;
    });

    it("an approval is asked with its choices and answered interactively (pseudo-terminal)", async () => {
      const run = pheby(server, ["chat", conversation, "/sim approval"], { tty: true });
      await run.waitFor("approve> ");
      expect(run.output()).toMatch(/\[1\] once/);
      run.child.stdin!.write("1\r");
      expect(await run.exit).toBe(0);
    });

    it("an edit's diff is shown in its approval and after it, coloured on a terminal; pheby tool shows the call", async (ctx) => {
      // /sim diff comes with the activity server (merged by the lead beside the thoughts server).
      const help = await runPheby(server, ["chat", conversation, "/sim help"]);
      if (!help.output.includes("/sim diff")) ctx.skip();
      const run = pheby(server, ["chat", conversation, "/sim diff"], { tty: true });
      await run.waitFor("approve> ");
      // The preview: the file, +/- counts and the unified diff, removed lines red and added green.
      const asked = run.output();
      expect(asked).toMatch(/diff \S+ \+\d+ -\d+/);
      const ESC = "\u001b";
      expect(asked).toMatch(new RegExp(`${ESC}\\[36m@@ -\\d+(,\\d+)? \\+\\d+(,\\d+)? @@`));
      expect(asked).toContain(`${ESC}[31m-`);
      expect(asked).toContain(`${ESC}[32m+`);
      run.child.stdin!.write("1\r");
      expect(await run.exit).toBe(0);
      // Off a terminal: the same diff, plain, and the call's ID to ask for it again.
      const json = await runPheby(server, ["chat", conversation, "/sim diff", "--json"], { input: "once\n" });
      expect(json.code).toBe(0);
      // The call's last event: its latest state, as tool.get gives it.
      const call = jsonLines(json.output)
        .filter((f) => f.type === "tool.event" && Array.isArray(f.content) && f.content.length > 0)
        .at(-1)!;
      expect(call).toBeDefined();
      const shown = await runPheby(server, ["tool", conversation, call.tool_call_id as string]);
      expect(shown.code).toBe(0);
      // Its latest state: approved, the edit completed (the event that carried the diff was its start).
      expect(shown.output).toContain(`${call.tool_name as string} completed`);
      expect(shown.output).toMatch(/^diff \S+ \+\d+ -\d+/m);
      expect(shown.output).toMatch(/^@@ /m);
      expect(shown.output).not.toContain(`${ESC}[`);
      const asJson = jsonLines(
        (await runPheby(server, ["tool", conversation, call.tool_call_id as string, "--json"])).output,
      )[0]!;
      expect(asJson).toMatchObject({
        type: "tool.event",
        tool_call_id: call.tool_call_id,
        content: call.content,
      });
      const unknown = await runPheby(server, ["tool", conversation, "no-such-call"]);
      expect(unknown.code).toBe(2);
    });

    it("chat prints the plan as a checklist each time it changes", async () => {
      const { code, output } = await runPheby(server, ["chat", conversation, "/sim plan"]);
      expect(code).toBe(0);
      const plans = output.split("\n").filter((l) => /^Plan \(\d+\/\d+ done\):$/.test(l));
      expect(plans.length).toBeGreaterThan(1);
      expect(output).toMatch(/^ {2}\[x\] \S/m);
      expect(output).toMatch(/^ {2}\[(~| )\] \S/m);
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
        // Under its own name, in a directory where that name is still free.
        mkdirSync(join(dir, "fresh"));
        const named = await runPheby(server, ["download", attachment.attachment_id, "--json"], {
          cwd: join(dir, "fresh"),
        });
        expect(readFileSync(join(dir, "fresh", "data.bin")).equals(bytes)).toBe(true);
        expect(jsonLines(named.output)[0]).toMatchObject({ path: "data.bin", size: bytes.length });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("download never replaces an existing file without --force, by its own name or with -o", async () => {
      const dir = mkdtempSync(join(tmpdir(), "pheby-cli-clobber-"));
      try {
        writeFileSync(join(dir, "mine.txt"), "the server's copy");
        const up = await runPheby(server, ["upload", conversation, join(dir, "mine.txt"), "--json"]);
        const id = (jsonLines(up.output)[0] as { attachment_id: string }).attachment_id;
        writeFileSync(join(dir, "mine.txt"), "my local edits");
        const listing = () => readdirSync(dir).sort();

        const byName = await runPheby(server, ["download", id], { cwd: dir });
        expect(byName.code).toBe(1);
        expect(byName.output).toContain(
          "pheby download: mine.txt already exists; pass --force to replace it, or -o to choose another path",
        );
        const withO = await runPheby(server, ["download", id, "-o", join(dir, "mine.txt")]);
        expect(withO.code).toBe(1);
        expect(withO.output).toContain(`${join(dir, "mine.txt")} already exists`);
        // Kept as it was, and no temporary file left behind.
        expect(readFileSync(join(dir, "mine.txt"), "utf8")).toBe("my local edits");
        expect(listing()).toEqual(["mine.txt"]);

        const forced = await runPheby(server, ["download", id, "--force"], { cwd: dir });
        expect(forced.code).toBe(0);
        expect(readFileSync(join(dir, "mine.txt"), "utf8")).toBe("the server's copy");
        writeFileSync(join(dir, "mine.txt"), "edited again");
        expect((await runPheby(server, ["download", id, "-o", join(dir, "mine.txt"), "-f"])).code).toBe(0);
        expect(readFileSync(join(dir, "mine.txt"), "utf8")).toBe("the server's copy");
        expect(listing()).toEqual(["mine.txt"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("attachments lists a conversation's files, both directions, as text and --json", async () => {
      const created = await runPheby(server, ["conversations", "create", "With files", "--json"]);
      const id = (jsonLines(created.output)[0] as { conversation_id: string }).conversation_id;
      const empty = await runPheby(server, ["attachments", id, "--json"]);
      expect(empty).toEqual({ code: 0, output: "" });
      const dir = mkdtempSync(join(tmpdir(), "pheby-cli-list-"));
      try {
        writeFileSync(join(dir, "notes.md"), "# Notes\n");
        const up = await runPheby(server, ["upload", id, join(dir, "notes.md"), "--json"]);
        const uploaded = jsonLines(up.output)[0] as { attachment_id: string };
        expect(
          (await runPheby(server, ["chat", id, "/sim image", "--attach", uploaded.attachment_id])).code,
        ).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const listed = await runPheby(server, ["attachments", "With files", "--json"]);
      expect(listed.code).toBe(0);
      const rows = jsonLines(listed.output);
      expect(rows.map((r) => [r.filename, r.direction, r.mime_type])).toEqual([
        ["notes.md", "inbound", "text/markdown"],
        ["pheby-image.png", "outbound", "image/png"],
      ]);
      for (const row of rows) expect(AttachmentDescriptor.safeParse(row).success).toBe(true);
      const text = await runPheby(server, ["attachments", id]);
      const lines = text.output.trim().split("\n");
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        new RegExp(`^${rows[0]!.attachment_id}  in   \\S+ +8 B  text/markdown  notes\\.md$`),
      );
      expect(lines[1]).toMatch(
        new RegExp(`^${rows[1]!.attachment_id}  out  \\S+ +[\\d.]+ (B|KiB)  image/png  pheby-image\\.png$`),
      );
    });

    it("pair prints a QR code that decodes to the pairing URI; devices lists and revokes; a device may not", async () => {
      const json = await runPheby(server, ["pair", "--name", "CLI phone", "--json"]);
      expect(json.code).toBe(0);
      const created = jsonLines(json.output)[0] as { code: string; uri: string; expires_at: string };
      expect(created.uri).toBe(
        `pheby://pair?${new URLSearchParams({ url: server.url, code: created.code })}`,
      );
      const phone = await pairDevice(created.uri, { deviceName: "ignored: the owner named it" });

      const text = await runPheby(server, ["pair"]);
      expect(text.code).toBe(0);
      const [qr, ...after] = text.output.split("Scan this with the Pheby app, or open: ");
      const uri = after.join("").split("\n")[0]!;
      expect(uri).toMatch(/^pheby:\/\/pair\?url=/);
      expect(decode(gridOf(qr!))).toBe(uri);

      const listed = await runPheby(server, ["devices", "--json"]);
      expect(listed.code).toBe(0);
      expect(jsonLines(listed.output)).toEqual([
        { device_id: phone.deviceId, name: "CLI phone", created_at: expect.any(String), last_seen_at: null },
      ]);
      const asDevice = await runPheby(server, ["devices"], { secret: phone.deviceSecret });
      expect(asDevice.code).toBe(2);
      expect(asDevice.output).toContain("bad_request: only the owner (the master secret) may list devices");
      const revoked = await runPheby(server, ["devices", "revoke", phone.deviceId]);
      expect(revoked.code).toBe(0);
      expect(revoked.output).toContain(`revoked ${phone.deviceId}`);
      expect((await runPheby(server, ["devices"])).output).toContain("No paired devices.");
      expect((await runPheby(server, ["devices"], { secret: phone.deviceSecret })).code).toBe(3);
      expect((await runPheby(server, ["devices", "revoke", phone.deviceId])).code).toBe(2);
    });

    it("--version prints the package version and the protocol version", async () => {
      const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, "../package.json"), "utf8")) as {
        version: string;
      };
      for (const flag of ["--version", "-V"])
        expect(await runPheby(server, [flag])).toEqual({
          code: 0,
          output: `pheby ${pkg.version} (Pheby Protocol v1)\n`,
        });
    });

    it("says what failed when the server cannot be reached: refused, DNS, TLS, HTTP status of the upgrade", async () => {
      const refusing = await refusingUpgrades(403);
      const closedPort = await freePort();
      try {
        const cases: [string, RegExp][] = [
          [
            `ws://127.0.0.1:${closedPort}/ws`,
            new RegExp(
              `^pheby conversations: connection refused by 127\\.0\\.0\\.1:${closedPort} \\(is the server running on that port\\?\\)$`,
            ),
          ],
          [
            "ws://pheby-cli-test.invalid/ws",
            /^pheby conversations: cannot resolve the host name pheby-cli-test\.invalid \(DNS: (ENOTFOUND|EAI_AGAIN)\)$/,
          ],
          [
            `wss://127.0.0.1:${refusing.port}/ws`,
            new RegExp(
              `^pheby conversations: TLS handshake with 127\\.0\\.0\\.1:${refusing.port} failed: .*wrong version number`,
            ),
          ],
          [
            `ws://127.0.0.1:${refusing.port}/ws`,
            new RegExp(
              `^pheby conversations: 127\\.0\\.0\\.1:${refusing.port} answered the WebSocket upgrade with HTTP 403 \\(is /ws the server's WebSocket endpoint`,
            ),
          ],
        ];
        for (const [url, message] of cases) {
          const run = await runPheby(server, ["conversations", "--url", url]);
          expect(run.output.trim()).toMatch(message);
          expect(run.code).toBe(4);
        }
        // Files go over plain HTTP: the same words.
        const download = await runPheby(server, [
          "download",
          "0123456789abcdef0123456789abcdef",
          "--url",
          `ws://127.0.0.1:${closedPort}/ws`,
        ]);
        expect(download.output.trim()).toBe(
          `pheby download: connection refused by 127.0.0.1:${closedPort} (is the server running on that port?)`,
        );
        expect(download.code).toBe(4);
      } finally {
        await refusing.close();
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

describe.skipIf(unavailable !== undefined)("pheby push against apps/server and a decrypting receiver", () => {
  it("lists, tests and removes subscriptions", async () => {
    const receiver = await startReceiver();
    const server = await startServer({ PHEBY_PUSH_ALLOW_PRIVATE: "true" });
    const client = new PhebyClient({
      url: server.url,
      secret: server.secret,
      reconnect: false,
      pingIntervalMs: 0,
    });
    try {
      await client.connect();
      const phone = receiver.endpoint("phone");
      const id = await client.subscribePush(phone, { deviceName: "Pixel" });
      const listed = jsonLines((await runPheby(server, ["push", "--json"])).output);
      expect(listed).toMatchObject([
        { subscription_id: id, device_name: "Pixel", endpoint_origin: receiver.url },
      ]);
      const plain = await runPheby(server, ["push"]);
      expect(plain.output).toContain(`${id}  ${receiver.url}  Pixel`);
      const tested = await runPheby(server, ["push", "test", id]);
      expect(tested).toMatchObject({ code: 0, output: "delivered\n" });
      expect((await phone.next()).payload).toMatchObject({ kind: "test", subscription_id: id });
      phone.answer(500);
      const failed = await runPheby(server, ["push", "test", id, "--json"]);
      expect(failed.code).toBe(5);
      expect(jsonLines(failed.output)).toEqual([
        { subscription_id: id, ok: false, status: null, error: "not delivered" },
      ]);
      expect(await runPheby(server, ["push", "remove", id])).toMatchObject({
        code: 0,
        output: `removed ${id}\n`,
      });
      expect((await runPheby(server, ["push"])).output).toContain("No push subscriptions.");
      expect((await runPheby(server, ["push", "test", id])).code).toBe(2);
      expect(receiver.errors).toEqual([]);
    } finally {
      client.close();
      await server.stop();
      await receiver.close();
    }
  });
});
