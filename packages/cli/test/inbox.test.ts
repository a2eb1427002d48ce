// The `inbox` commands end to end: the built CLI as a child process against the real apps/server
// (`pheby conversations --status / --archived`, `archive` / `unarchive`, `pheby search`), with a
// @pheby/client connection driving the conversations into each status through the simulator.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { PhebyClient } from "@pheby/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serverUnavailable, startServer, type TestServer } from "../../conformance/test/server.js";

const CLI = resolve(import.meta.dirname, "../dist/main.js");
const unavailable = serverUnavailable();

/** Run the CLI to completion on pipes; resolves with the exit code, stdout and stderr. */
function runPheby(server: TestServer, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? "", PHEBY_URL: server.url, PHEBY_SECRET: server.secret, TERM: "dumb" },
  });
  child.stdin.end();
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((done) => child.once("close", (code) => done({ code: code ?? -1, out, err })));
}

const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe.skipIf(unavailable !== undefined)(
  `pheby inbox commands against apps/server${unavailable ? ` (${unavailable})` : ""}`,
  () => {
    let server: TestServer;
    let client: PhebyClient;
    let waiting = "";
    let answered = "";

    beforeAll(async () => {
      server = await startServer();
      client = new PhebyClient({
        url: server.url,
        secret: server.secret,
        reconnect: false,
        pingIntervalMs: 0,
      });
      await client.connect();
      // One conversation waits for an approval; one has an answer nobody read.
      waiting = (await client.request({ type: "conversation.create", name: "Needs me" })).conversation_id;
      const asked = client.next("approval.request", (m) => m.conversation_id === waiting);
      await client.request({ type: "chat.send", conversation_id: waiting, text: "/sim approval" });
      await asked;
      answered = (await client.request({ type: "conversation.create", name: "Answered" })).conversation_id;
      const { run_id } = await client.request({
        type: "chat.send",
        conversation_id: answered,
        text: "tell me about quokkas",
      });
      await client.next("run.finished", (m) => m.run_id === run_id);
    });
    afterAll(async () => {
      client?.close();
      await server?.stop();
    });

    it("conversations shows status and unread columns; --status waiting lists only who needs me", async () => {
      const all = await runPheby(server, ["conversations"]);
      expect(all.code).toBe(0);
      const line = (id: string) => all.out.split("\n").find((l) => l.startsWith(id));
      expect(line(waiting)).toMatch(new RegExp(`^${waiting} {2}waiting {2} +0 {2}.* {2}Needs me$`));
      expect(line(answered)).toMatch(new RegExp(`^${answered} {2}idle {5} +1 {2}.* {2}Answered$`));

      const needsMe = await runPheby(server, ["conversations", "--status", "waiting", "--json"]);
      expect(needsMe.code).toBe(0);
      expect(jsonLines(needsMe.out)).toEqual([
        expect.objectContaining({ conversation_id: waiting, status: "waiting", pending: 1 }),
      ]);

      const bad = await runPheby(server, ["conversations", "--status", "busy"]);
      expect(bad.code).toBe(1);
      expect(bad.err).toContain("--status must be one of waiting, running, failed, idle");
    });

    it("archive by name leaves the list for --archived; unarchive brings it back", async () => {
      const archived = await runPheby(server, ["conversations", "archive", "Answered"]);
      expect(archived).toMatchObject({ code: 0, out: `archived ${answered}\n` });
      const ids = async (args: string[]) =>
        jsonLines((await runPheby(server, ["conversations", ...args, "--json"])).out).map(
          (c) => c.conversation_id,
        );
      expect(await ids([])).not.toContain(answered);
      expect(await ids(["--archived"])).toEqual([answered]);

      // An archived conversation is still found by its name.
      const back = await runPheby(server, ["conversations", "unarchive", "Answered", "--json"]);
      expect(back.code).toBe(0);
      expect(jsonLines(back.out)).toEqual([{ conversation_id: answered, archived: false }]);
      expect(await ids([])).toContain(answered);
      expect(await ids(["--archived"])).toEqual([]);
    });

    it("search prints hits newest first, --limit caps them, text FTS5 cannot parse is words", async () => {
      const found = await runPheby(server, ["search", "quokkas"]);
      expect(found.code).toBe(0);
      const lines = found.out.trim().split("\n");
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(l).toMatch(new RegExp(`^${answered} {2}m\\d+ .*quokkas`));

      const one = await runPheby(server, ["search", "quokkas", "--limit", "1", "--json"]);
      expect(jsonLines(one.out)).toEqual([
        expect.objectContaining({ conversation_id: answered, message_id: expect.stringMatching(/^m\d+$/) }),
      ]);
      expect((await runPheby(server, ["search", '"quokkas'])).out).toBe(found.out);
      expect(await runPheby(server, ["search", "nothing-like-this-anywhere"])).toMatchObject({
        code: 0,
        out: "No results.\n",
      });

      const tooMany = await runPheby(server, ["search", "quokkas", "--limit", "51"]);
      expect(tooMany.code).toBe(2);
      expect(tooMany.err).toContain("bad_request");
      expect((await runPheby(server, ["search"])).code).toBe(1);
    });
  },
);
