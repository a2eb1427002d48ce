// `pheby agents`, `pheby workspaces`, `pheby conversations create --agent --workspace --worktree`, the
// list's agent@workspace [branch] column and `pheby changes`: the built CLI as a child process. The
// server does not answer the workspaces and changes extensions yet, so their answers come from a
// scripted peer on 127.0.0.1 replaying @pheby/protocol's own valid fixtures (each checked against the
// features the peer enabled); against the real apps/server, which does not enable them, the commands
// fail with the protocol exit code and say why.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { decodeServerFrame, FEATURE_CHANGES, FEATURE_WORKSPACES } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultHandler, ScriptedPeer, TS } from "../../client/test/peer.js";
import { serverUnavailable, startServer, type TestServer } from "../../conformance/test/server.js";

const CLI = resolve(import.meta.dirname, "../dist/main.js");
const FIXTURES = resolve(import.meta.dirname, "../../protocol/fixtures/valid/server");
const ENABLED = [FEATURE_WORKSPACES, FEATURE_CHANGES];
const CONV = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

/** A valid server fixture of @pheby/protocol, as the reply to `request`. */
function fixture(name: string, request: Record<string, unknown>): Record<string, unknown> {
  const frame = JSON.parse(readFileSync(resolve(FIXTURES, `${name}.json`), "utf8")) as Record<
    string,
    unknown
  >;
  const { request_id: _r, seq: _s, ...rest } = frame;
  return { ...rest, request_id: request.request_id };
}

/** Run the CLI to completion on pipes; resolves with the exit code, stdout and stderr. */
function runPheby(
  url: string,
  secret: string,
  args: string[],
): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? "", PHEBY_URL: url, PHEBY_SECRET: secret, TERM: "dumb" },
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

describe("pheby agents, workspaces, conversations and changes against a scripted workspaces + changes server", () => {
  let peer: ScriptedPeer;
  const run = (args: string[]) => runPheby(peer.url, "s3cret", args);
  /** The requests the CLI sent (all connections), without request_id and client_message_id. */
  const sent = (type: string) =>
    peer.connections
      .flatMap((c) => c.received)
      .filter((f) => f.type === type)
      .map(({ request_id: _r, client_message_id: _c, ...f }) => f);

  beforeAll(async () => {
    peer = await ScriptedPeer.start();
    peer.handler = (frame, conn) => {
      const replies = ((): unknown[] | undefined => {
        switch (frame.type) {
          case "hello":
            return [{ ...defaultHandler(frame, conn)![0]!, features: ENABLED }] as unknown[];
          case "agents.list":
            return [fixture("agents.snapshot", frame)];
          case "workspaces.list":
            return [fixture("workspaces.snapshot", frame)];
          case "conversation.create":
            return [fixture("conversation.created.workspaces", frame)];
          case "conversation.list":
            return [fixture("conversation.snapshot.workspaces", frame)];
          case "models.list":
            return [fixture("models.snapshot", frame)];
          case "model.set":
            return [fixture("model.changed.agent", frame)];
          case "changes.list":
            return [fixture("changes.snapshot", frame)];
          case "changes.diff":
            if (frame.file_id === "c-1b2c3d4e5f6a7b8c") return [fixture("changes.file.binary", frame)];
            if (frame.file_id === "c-7d1e9a0b3f2c4e5d") return [fixture("changes.file", frame)];
            return [
              {
                type: "error",
                request_id: frame.request_id,
                error: { code: "not_found", message: "no such changed file" },
                ts: TS,
              },
            ];
          default:
            return defaultHandler(frame, conn);
        }
      })();
      for (const reply of replies ?? [])
        expect(
          decodeServerFrame(JSON.stringify(reply), { features: ENABLED }).ok,
          JSON.stringify(reply),
        ).toBe(true);
      return replies;
    };
  });
  afterAll(async () => {
    await peer?.close();
  });

  it("pheby agents lists each agent with its status, the default marked; --json one per line", async () => {
    const text = await run(["agents"]);
    expect(text.code).toBe(0);
    expect(text.out.split("\n").filter(Boolean)).toEqual([
      expect.stringMatching(/^\* claude {8}ready {5}Claude Code$/),
      expect.stringMatching(/^ {2}hermes {8}idle {6}Hermes Agent$/),
    ]);
    const json = await run(["agents", "--json"]);
    expect(jsonLines(json.out).map((a) => a.agent_id)).toEqual(["claude", "hermes"]);
  });

  it("pheby workspaces lists each workspace, git or not, and its agents", async () => {
    const text = await run(["workspaces"]);
    expect(text.code).toBe(0);
    expect(text.out.split("\n").filter(Boolean)).toEqual([
      expect.stringMatching(/^site +git +claude,hermes +Website$/),
      expect.stringMatching(/^notes +- +claude,hermes +Notes$/),
    ]);
  });

  it("conversations create --agent --workspace --worktree sends them and prints where it runs", async () => {
    const created = await run([
      "conversations",
      "create",
      "Fix the footer",
      "--agent",
      "claude",
      "--workspace",
      "site",
      "--worktree",
    ]);
    expect(created.code).toBe(0);
    expect(created.out).toBe(`${CONV}  claude@site [pheby/a1b2c3d4]  Fix the footer\n`);
    const json = await run(["conversations", "create", "--agent", "claude", "--json"]);
    expect(jsonLines(json.out)).toEqual([
      {
        conversation_id: CONV,
        name: "Fix the footer",
        agent_id: "claude",
        workspace_id: "site",
        branch: "pheby/a1b2c3d4",
      },
    ]);
    expect(sent("conversation.create")).toEqual([
      {
        type: "conversation.create",
        name: "Fix the footer",
        agent_id: "claude",
        workspace_id: "site",
        worktree: true,
      },
      { type: "conversation.create", agent_id: "claude" },
    ]);
    const misplaced = await run(["conversations", "list", "--worktree"]);
    expect(misplaced.code).toBe(1);
  });

  it("the conversation list shows agent@workspace and the branch, and passes the filters", async () => {
    const list = await run(["conversations", "--workspace", "site"]);
    expect(list.code).toBe(0);
    const lines = list.out.split("\n").filter(Boolean);
    expect(lines[0]).toMatch(
      new RegExp(`^${CONV} {2}\\S+ {2}claude@site \\[pheby/a1b2c3d4\\] {2}Fix the footer$`),
    );
    expect(lines[1]).toMatch(/^b1b2c3d4e5f60718293a4b5c6d7e8f90 {2}- +claude@site {2}Started at the desk$/);
    expect(sent("conversation.list").at(-1)).toEqual({ type: "conversation.list", workspace_id: "site" });
  });

  it("models and model set --agent address that agent's global scope", async () => {
    expect((await run(["models", "--agent", "hermes"])).code).toBe(0);
    const set = await run(["model", "set", "z-ai/glm-5.3-flash", "--agent", "hermes"]);
    expect(set.code).toBe(0);
    expect(set.out).toBe("model: z-ai/glm-5.3-flash  [global]\n");
    expect(sent("models.list").at(-1)).toEqual({ type: "models.list", agent_id: "hermes" });
    expect(sent("model.set").at(-1)).toEqual({
      type: "model.set",
      model: "z-ai/glm-5.3-flash",
      agent_id: "hermes",
    });
  });

  it("pheby changes lists the files with their status and +/- counts", async () => {
    const list = await run(["changes", CONV]);
    expect(list.code).toBe(0);
    expect(list.out.split("\n").filter(Boolean)).toEqual([
      "base 3f78685 · 6 files +15 −50",
      "M  +12    -3      src/footer.ts",
      "R  +1     -1      src/footer.css -> src/site-footer.css",
      "A  binary         assets/logo.png",
      "D  +0     -40     docs/old.md",
      "T  +1     -5      current  (symlink)",
      "M  +1     -1      vendor/lib  (submodule)",
    ]);
    const json = await run(["changes", CONV, "--json"]);
    const [snapshot] = jsonLines(json.out);
    expect(snapshot).toMatchObject({ base: { label: "3f78685" }, truncated: false });
    expect((snapshot!.files as unknown[]).length).toBe(6);
  });

  it("pheby changes <conversation> <file> prints its patch, by path as listed or by file_id", async () => {
    const byPath = await run(["changes", CONV, "src/footer.ts"]);
    expect(byPath.code).toBe(0);
    expect(byPath.out).toContain('+  return "© 2026";\n');
    expect(byPath.out).toContain("@@ -1,3 +1,3 @@\n");
    const byId = await run(["changes", CONV, "c-7d1e9a0b3f2c4e5d"]);
    expect(byId.out).toBe(byPath.out);
    const binary = await run(["changes", CONV, "assets/logo.png"]);
    expect(binary.out).toBe("Binary file assets/logo.png: no patch.\n");
    const gone = await run(["changes", CONV, "nope.txt"]);
    expect(gone.code).toBe(2);
    expect(gone.err).toContain("no such changed file");
    expect(sent("changes.diff").map((f) => f.file_id)).toEqual([
      "c-7d1e9a0b3f2c4e5d",
      "c-7d1e9a0b3f2c4e5d",
      "c-1b2c3d4e5f6a7b8c",
      "nope.txt",
    ]);
  });
});

const unavailable = serverUnavailable();

describe.skipIf(unavailable !== undefined)(
  `pheby agents, workspaces and changes against apps/server, which does not enable them${unavailable ? ` (${unavailable})` : ""}`,
  () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer();
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("each fails with the protocol exit code and names the missing extension", async () => {
      for (const [args, feature] of [
        [["agents"], "workspaces"],
        [["workspaces"], "workspaces"],
        [["changes", CONV], "changes"],
        [["conversations", "create", "x", "--worktree"], "workspaces"],
        [["models", "--agent", "default"], "workspaces"],
      ] as const) {
        const result = await runPheby(server.url, server.secret, [...args]);
        expect(result.code, args.join(" ")).toBe(2);
        expect(result.err).toContain(`needs the server's ${feature} extension`);
      }
    });
  },
);
