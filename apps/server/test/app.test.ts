// pheby-server as an operator runs it: the built dist/main.js in a child
// process, configured only through the environment.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DEFAULT_FEATURES, PhebyClient, pairDevice } from "@pheby/client";
import { CLOSE_CODES, FEATURE_WORKSPACES, type ServerMessage } from "@pheby/protocol";
import { createWorktree, GitRunner } from "@pheby/server";
import { answerOf } from "@pheby/testkit";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));
/** The scripted ACP agent of @pheby/server's tests, run through that package's tsx. */
const SERVER_PACKAGE = fileURLToPath(new URL("../../../packages/server/", import.meta.url));
const FAKE_AGENT = `${process.execPath} --import ${pathToFileURL(createRequire(SERVER_PACKAGE).resolve("tsx")).href} ${join(SERVER_PACKAGE, "test/acp/fake-agent.ts")}`;
const children: ChildProcess[] = [];
/** The client's defaults and the `workspaces` extension. */
const WORKSPACES = [...DEFAULT_FEATURES, FEATURE_WORKSPACES];

afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Start the app; resolves once it logged that it listens, with everything it printed so far. */
function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (output.includes("pheby-server listening")) {
        clearInterval(timer);
        resolve();
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`pheby-server exited (${code}): ${output}`));
    });
  });
  return { child, listening, exited, output: () => output };
}

/** Start the app with `secret` on a free port, its data in a new work directory, plus `env(work)`. */
async function startWithSecret(secret: string, env: (work: string) => Record<string, string>) {
  const work = mkdtempSync(join(tmpdir(), "pheby-app-"));
  const port = await freePort();
  const app = start({
    PHEBY_DATA_DIR: join(work, "data"),
    PHEBY_PORT: String(port),
    PHEBY_SECRET: secret,
    ...env(work),
  });
  await app.listening;
  return { app, url: `ws://127.0.0.1:${port}/ws` };
}

describe("pheby-server", () => {
  it("starts on its defaults with a generated secret, logs only its path, serves a chat, and stops cleanly on SIGTERM", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "pheby-app-")), "data");
    const port = await freePort();
    const app = start({ PHEBY_DATA_DIR: dataDir, PHEBY_PORT: String(port) });
    await app.listening;

    const secretFile = join(dataDir, "secret");
    const secret = readFileSync(secretFile, "utf8").trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(app.output()).toContain(secretFile);
    expect(app.output()).not.toContain(secret);

    const client = new PhebyClient({ url: `ws://127.0.0.1:${port}/ws`, secret, reconnect: false });
    await client.connect();
    const { conversation_id } = await client.request({ type: "conversation.create", name: "App" });
    const finished = client.next("run.finished");
    await client.request({ type: "chat.send", conversation_id, text: "private words" });
    expect(await finished).toMatchObject({ status: "completed" });

    // A raw socket sees the going-away close; the process exits 0.
    const raw = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    await new Promise((r) => raw.once("open", r));
    raw.send(JSON.stringify({ type: "hello", secret, protocol_version: 1 }));
    await new Promise((r) => raw.once("message", r));
    const closed = new Promise<number>((r) => raw.once("close", (code) => r(code)));
    app.child.kill("SIGTERM");
    expect(await closed).toBe(CLOSE_CODES.goingAway);
    expect(await app.exited).toBe(0);
    client.close();

    // Chat text and the secret never reached the logs.
    expect(app.output()).not.toContain("private words");
    expect(app.output()).not.toContain(secret);

    // The data survives a restart with the same generated secret.
    const again = start({ PHEBY_DATA_DIR: dataDir, PHEBY_PORT: String(port) });
    await again.listening;
    const reader = new PhebyClient({ url: `ws://127.0.0.1:${port}/ws`, secret, reconnect: false });
    await reader.connect();
    const history = await reader.request({ type: "conversation.open", conversation_id });
    expect(history.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    reader.close();
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });

  it("offers its built MCP server (dist/mcp.js) to an ACP agent, with the tools its settings name", async () => {
    const secret = "app-test-secret-0123456789abcdef";
    const { app, url } = await startWithSecret(secret, (work) => ({
      PHEBY_AGENT: "acp",
      PHEBY_AGENT_COMMAND: FAKE_AGENT,
      PHEBY_AGENT_CWD: work,
      PHEBY_AGENT_MCP_TOOLS: "schedule_create,schedule_list",
      PHEBY_SCHEDULES_TIMEZONE: "Europe/Paris",
      FAKE_STATE: join(work, "fake-agent.json"),
    }));
    const client = new PhebyClient({
      url,
      secret,
      reconnect: false,
      features: ["schedules"],
    });
    await client.connect();
    const { conversation_id } = await client.request({ type: "conversation.create" });
    const frames: ServerMessage[] = [];
    client.on("message.start", (m) => frames.push(m));
    client.on("message.complete", (m) => frames.push(m));
    const chat = async (text: string) => {
      const finished = client.next("run.finished");
      const { run_id } = await client.request({ type: "chat.send", conversation_id, text });
      expect(await finished).toMatchObject({ run_id, status: "completed" });
      return answerOf(frames, run_id)?.text;
    };
    expect(await chat("mcp list")).toBe("schedule_create,schedule_list");
    const heard = client.next("schedule.changed");
    const made = await chat('mcp schedule_create {"prompt":"water the plants","cron":"0 7 * * *"}');
    // The agent's schedule waits, disabled and unconfirmed, until the user confirms it.
    expect(JSON.parse(made!.replace(/^schedule_create -> /, ""))).toMatchObject({
      active: false,
      schedule: {
        conversation_id,
        prompt: "water the plants",
        timezone: "Europe/Paris",
        created_by: "agent",
        confirmed: false,
      },
    });
    expect((await heard).schedule).toMatchObject({ conversation_id, cron: "0 7 * * *", enabled: false });
    client.close();
    app.child.kill("SIGTERM");
    expect(await app.exited).toBe(0);
  });

  it("takes its lockout from the environment: one failure locks the address for the configured second", async () => {
    const secret = "lockout-settings-secret-0123";
    const { app, url } = await startWithSecret(secret, () => ({
      PHEBY_LOCKOUT_MAX_FAILURES: "1",
      PHEBY_LOCKOUT_DURATION_SECONDS: "1",
    }));
    /** The close code a hello with secret `s` ends in (none for a hello that is accepted). */
    const closeCode = (s: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        const ws = new WebSocket(url);
        ws.once("open", () => ws.send(JSON.stringify({ type: "hello", secret: s, protocol_version: 1 })));
        ws.once("message", (data) => {
          if (JSON.parse(String(data)).type !== "ready") return;
          ws.close();
          resolve(undefined);
        });
        ws.once("close", (code) => resolve(code));
        ws.once("error", reject);
      });
    expect(await closeCode(`${secret}-wrong`)).toBe(CLOSE_CODES.unauthorized);
    // With the default (5 failures) the right secret would now be accepted; one failure locked it.
    expect(await closeCode(secret)).toBe(CLOSE_CODES.lockedOut);
    // The lock lasts a second, not the default five minutes: poll until it has expired.
    let ready: number | undefined = CLOSE_CODES.lockedOut;
    for (let i = 0; i < 200 && ready === CLOSE_CODES.lockedOut; i++) {
      await new Promise((r) => setTimeout(r, 50));
      ready = await closeCode(secret);
    }
    expect(ready).toBeUndefined();
    app.child.kill("SIGTERM");
    expect(await app.exited).toBe(0);
  });

  it("still stops on SIGTERM when the reader of its stdout has gone away (EPIPE on the log)", async () => {
    // Shutdown must finish whatever happens to the log: pino's exit-time flush used to retry a broken
    // pipe forever.
    const dataDir = mkdtempSync(join(tmpdir(), "pheby-app-"));
    const port = await freePort();
    const app = start({ PHEBY_DATA_DIR: dataDir, PHEBY_PORT: String(port) });
    await app.listening;
    // The log reader (a crashed log shipper, a closed terminal) is gone: the next log line, written
    // during shutdown, meets EPIPE.
    app.child.stdout!.destroy();
    app.child.kill("SIGTERM");
    const code = await Promise.race([
      app.exited,
      new Promise<string>((r) => setTimeout(() => r("still running 15 s after SIGTERM"), 15_000)),
    ]);
    expect(code).toBe(0);
  }, 30_000);

  it("answers --help and --version without starting, and refuses an unknown argument", () => {
    const cwd = mkdtempSync(join(tmpdir(), "pheby-args-"));
    const run = (arg: string) =>
      spawnSync(process.execPath, [MAIN, arg], {
        cwd,
        env: { PATH: process.env.PATH ?? "" },
        encoding: "utf8",
        timeout: 15_000,
      });
    const helped = run("--help");
    expect(helped.status).toBe(0);
    expect(helped.stdout).toContain("usage: pheby-server");
    // Every operator-facing setting is listed with its YAML key.
    expect(helped.stdout).toMatch(/PHEBY_HTTP_IDLE_TIMEOUT_SECONDS\s+http_idle_timeout_seconds/);
    expect(helped.stdout).toMatch(/PHEBY_AGENT_COMMAND\s+agent\.command/);
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    const versioned = run("--version");
    expect(versioned.status).toBe(0);
    expect(versioned.stdout.trim()).toBe(`pheby-server ${pkg.version} (Pheby Protocol v1)`);
    const unknown = run("--port=9000");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('unknown argument "--port=9000"');
    // None of them started a server: no data directory, no generated secret.
    expect(existsSync(join(cwd, ".pheby-data"))).toBe(false);
  });

  it("pairs a phone through PHEBY_PUBLIC_URL; devices revoke-all offline refuses its secret, rotating the secret does not", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "pheby-devices-"));
    const dataDir = join(cwd, "data");
    const port = await freePort();
    const publicUrl = `ws://127.0.0.1:${port}/ws`;
    const env = { PHEBY_DATA_DIR: dataDir, PHEBY_PORT: String(port), PHEBY_PUBLIC_URL: publicUrl };
    const app = start(env);
    await app.listening;
    const secret = readFileSync(join(dataDir, "secret"), "utf8").trim();
    const owner = new PhebyClient({
      url: publicUrl,
      secret,
      reconnect: false,
      features: [...DEFAULT_FEATURES, "devices"],
    });
    await owner.connect();
    const { uri } = await owner.createPairing("Pixel 9");
    const phone = await pairDevice(uri);
    expect(phone.url).toBe(publicUrl);
    owner.close();
    expect(app.output()).toContain(phone.deviceId);
    expect(app.output()).not.toContain(phone.deviceSecret);
    app.child.kill("SIGTERM");
    expect(await app.exited).toBe(0);

    const run = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, ...args], {
        cwd,
        env: { PATH: process.env.PATH ?? "", ...env },
        encoding: "utf8",
        timeout: 15_000,
      });
    // Rotating the master secret leaves the device alone.
    expect(run(["rotate-secret"]).status).toBe(0);
    const listed = run(["devices"]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${phone.deviceId}  paired \\S+  never seen  Pixel 9$`, "m"));
    const again = start(env);
    await again.listening;
    const device = new PhebyClient({ url: publicUrl, secret: phone.deviceSecret, reconnect: false });
    await device.connect();
    device.close();
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);

    const revoked = run(["devices", "revoke-all"]);
    expect(revoked.status).toBe(0);
    expect(revoked.stdout).toContain("Revoked 1 device.");
    expect(run(["devices"]).stdout).toContain("No paired devices.");
    const third = start(env);
    await third.listening;
    const refused = new PhebyClient({ url: publicUrl, secret: phone.deviceSecret, reconnect: false });
    await expect(refused.connect()).rejects.toMatchObject({ code: "unauthorized" });
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  });

  it("rotates the generated secret offline, says devices keep working, and leaves a configured secret to the operator", () => {
    const cwd = mkdtempSync(join(tmpdir(), "pheby-rotate-"));
    const run = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [MAIN, ...args], {
        cwd,
        env: { PATH: process.env.PATH ?? "", ...env },
        encoding: "utf8",
        timeout: 15_000,
      });
    const never = run(["rotate-secret"]);
    expect(never.status).toBe(2);
    expect(never.stderr).toContain("there is no generated secret");
    expect(existsSync(join(cwd, ".pheby-data"))).toBe(false);
    const file = join(cwd, ".pheby-data", "secret");
    mkdirSync(join(cwd, ".pheby-data"));
    writeFileSync(file, `${"0".repeat(64)}\n`, { mode: 0o600 });
    const rotated = run(["rotate-secret"]);
    expect(rotated.status).toBe(0);
    const secret = readFileSync(file, "utf8").trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(secret).not.toBe("0".repeat(64));
    expect(rotated.stdout).toContain(`A new secret is in ${file}`);
    expect(rotated.stdout).toContain("rotating the master secret does not revoke them");
    expect(rotated.stdout + rotated.stderr).not.toContain(secret);
    expect(run(["rotate-secret"]).status).toBe(0);
    expect(readFileSync(file, "utf8").trim()).not.toBe(secret);

    const configured = run(["rotate-secret"], { PHEBY_SECRET: "configured-secret-0123456789" });
    expect(configured.status).toBe(2);
    expect(configured.stderr).toContain("the secret is set by PHEBY_SECRET");
    expect(configured.stderr).not.toContain("configured-secret-0123456789");

    const none = run(["devices"], { PHEBY_DATA_DIR: join(cwd, "nowhere") });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain(`no database in ${join(cwd, "nowhere")}`);
    expect(existsSync(join(cwd, "nowhere"))).toBe(false);
  });

  it("refuses bad configuration with exit code 2 and a readable message", async () => {
    const app = start({ PHEBY_PORT: "eighty", PHEBY_DATA_DIR: mkdtempSync(join(tmpdir(), "pheby-app-")) });
    await expect(app.listening).rejects.toThrow(/exited \(2\)/);
    expect(app.output()).toContain("PHEBY_PORT (port)");
  });

  it("refuses an agent user the system does not know with exit code 2", async () => {
    const app = start({
      PHEBY_AGENT: "acp",
      PHEBY_AGENT_COMMAND: `${process.execPath} --version`,
      PHEBY_AGENT_USER: "pheby-no-such-user",
      PHEBY_DATA_DIR: mkdtempSync(join(tmpdir(), "pheby-app-")),
      PHEBY_PORT: "0",
    });
    await expect(app.listening).rejects.toThrow(/exited \(2\)/);
    expect(app.output()).toContain('PHEBY_AGENT_USER (agent.user): no such user: "pheby-no-such-user"');
  });

  it("refuses an ACP agent command that is not on PATH, or a missing agent directory, with exit code 2", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "pheby-app-"));
    const missing = start({
      PHEBY_AGENT: "acp",
      PHEBY_AGENT_COMMAND: "pheby-no-such-agent acp",
      PHEBY_DATA_DIR: dataDir,
      PHEBY_PORT: "0",
    });
    await expect(missing.listening).rejects.toThrow(/exited \(2\)/);
    expect(missing.output()).toContain('the agent command "pheby-no-such-agent" was not found on PATH');

    const noCwd = start({
      PHEBY_AGENT: "acp",
      PHEBY_AGENT_COMMAND: `${process.execPath} --version`,
      PHEBY_AGENT_CWD: join(dataDir, "not-here"),
      PHEBY_DATA_DIR: dataDir,
      PHEBY_PORT: "0",
    });
    await expect(noCwd.listening).rejects.toThrow(/exited \(2\)/);
    expect(noCwd.output()).toContain(
      `the agent's working directory ${join(dataDir, "not-here")} does not exist`,
    );
  });

  it("starts the ACP agent before serving, and exits 1 naming the reason when it cannot", async () => {
    // A real executable that exits at once instead of answering `initialize`.
    const app = start({
      PHEBY_AGENT: "acp",
      PHEBY_AGENT_COMMAND: `${process.execPath} -e process.exit(3)`,
      PHEBY_DATA_DIR: mkdtempSync(join(tmpdir(), "pheby-app-")),
      PHEBY_PORT: "0",
    });
    await expect(app.listening).rejects.toThrow(/exited \(1\)/);
    expect(app.output()).toMatch(/pheby-server: the agent failed to start: .*exit code 3/);
    expect(app.output()).toContain('"msg":"the agent failed to start"');
  });

  it("serves several agents and workspaces from the YAML file, making the worktrees directory beside the data directory", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-agents-"));
    const site = join(work, "site");
    const notes = join(work, "notes");
    mkdirSync(site);
    mkdirSync(notes);
    const config = join(work, "pheby.yaml");
    writeFileSync(
      config,
      [
        "agents:",
        "  - { id: sim-a, name: First, kind: simulator }",
        "  - { id: sim-b, name: Second, kind: simulator }",
        "workspaces:",
        `  - { id: site, name: Website, path: ${JSON.stringify(site)}, agents: [sim-b] }`,
        `  - { id: notes, name: Notes, path: ${JSON.stringify(notes)} }`,
        "",
      ].join("\n"),
    );
    const { app, url } = await startWithSecret("s".repeat(32), () => ({
      PHEBY_CONFIG: config,
      PHEBY_DATA_DIR: join(work, "data"),
    }));
    expect(app.output()).toContain('"agents":["sim-a (simulator)","sim-b (simulator)"]');
    expect(statSync(join(work, "data-worktrees")).mode & 0o777).toBe(0o700);
    const client = new PhebyClient({ url, secret: "s".repeat(32), reconnect: false, features: WORKSPACES });
    await client.connect();
    expect((await client.request({ type: "agents.list" })).agents).toEqual([
      { agent_id: "sim-a", name: "First", status: expect.any(String) },
      { agent_id: "sim-b", name: "Second", status: expect.any(String) },
    ]);
    expect((await client.request({ type: "workspaces.list" })).workspaces).toEqual([
      { workspace_id: "site", name: "Website", agents: ["sim-b"], git: false },
      { workspace_id: "notes", name: "Notes", agents: ["sim-a", "sim-b"], git: false },
    ]);
    // With only the workspace: its first agent answers.
    const created = await client.request({ type: "conversation.create", name: "Two", workspace_id: "site" });
    expect(created).toMatchObject({ agent_id: "sim-b", workspace_id: "site", branch: null });
    // With neither: the default agent in the first workspace that allows it.
    expect(await client.request({ type: "conversation.create", name: "One" })).toMatchObject({
      agent_id: "sim-a",
      workspace_id: "notes",
    });
    const finished = client.next("run.finished");
    await client.request({ type: "chat.send", conversation_id: created.conversation_id, text: "hello" });
    expect(await finished).toMatchObject({ status: "completed" });
    client.close();
  });

  it("makes a conversation's git worktree in the worktrees directory (pheby/<id>), and removes it with the conversation", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-agents-"));
    const repo = join(work, "repo");
    mkdirSync(repo);
    const git = (...args: string[]) =>
      spawnSync("git", args, {
        cwd: repo,
        env: { PATH: process.env.PATH ?? "", GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
        encoding: "utf8",
      });
    git("init", "-q");
    writeFileSync(join(repo, "a.txt"), "a\n");
    git("add", "a.txt");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first");
    const config = join(work, "pheby.yaml");
    writeFileSync(
      config,
      `agents:\n  - { id: sim, kind: simulator }\nworkspaces:\n  - { id: repo, name: Repo, path: ${JSON.stringify(repo)} }\n`,
    );
    const { url } = await startWithSecret("s".repeat(32), () => ({
      PHEBY_CONFIG: config,
      PHEBY_DATA_DIR: join(work, "data"),
    }));
    const client = new PhebyClient({ url, secret: "s".repeat(32), reconnect: false, features: WORKSPACES });
    await client.connect();
    const created = await client.request({ type: "conversation.create", worktree: true });
    const root = join(work, "data-worktrees", created.conversation_id);
    expect(created.branch).toBe(`pheby/${created.conversation_id.slice(0, 8)}`);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("a\n");
    await client.request({ type: "conversation.delete", conversation_id: created.conversation_id });
    expect(existsSync(root)).toBe(false);
    expect(git("branch", "--list", created.branch!).stdout).toContain(created.branch!);
    client.close();
  });

  it("refuses to start when a configured worktrees directory cannot be made; a default one out of reach is only a warning", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-wt-dir-"));
    writeFileSync(join(work, "file"), "");
    const configured = start({
      PHEBY_DATA_DIR: join(work, "data"),
      PHEBY_WORKTREES_DIR: join(work, "file", "worktrees"),
      PHEBY_PORT: "0",
    });
    await expect(configured.listening).rejects.toThrow(/exited \(2\)/);
    expect(configured.output()).toContain(
      `cannot prepare the worktrees directory ${join(work, "file", "worktrees")} (PHEBY_WORKTREES_DIR / worktrees_dir)`,
    );
    // The default, <data_dir>-worktrees, is taken by a file.
    writeFileSync(join(work, "data-worktrees"), "");
    const { app } = await startWithSecret("s".repeat(32), () => ({ PHEBY_DATA_DIR: join(work, "data") }));
    expect(app.output()).toContain("cannot create the default worktrees directory");
  });

  it("checks every agent's command and every workspace at start: exit 2 naming the entry", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-agents-"));
    const config = join(work, "pheby.yaml");
    const startWith = (yaml: string) => {
      writeFileSync(config, yaml);
      return start({ PHEBY_CONFIG: config, PHEBY_DATA_DIR: join(work, "data"), PHEBY_PORT: "0" });
    };
    mkdirSync(join(work, "site"));
    const noCommand = startWith(
      `agents:\n  - { id: sim, kind: simulator }\n  - { id: claude, command: pheby-no-such-agent }\nworkspaces:\n  - { id: w, path: ${JSON.stringify(join(work, "site"))} }\n`,
    );
    await expect(noCommand.listening).rejects.toThrow(/exited \(2\)/);
    expect(noCommand.output()).toContain('the agent command "pheby-no-such-agent" was not found on PATH');
    expect(noCommand.output()).toContain("agents.1.command (claude)");
    // Nothing was made before the check.
    expect(existsSync(join(work, "data-worktrees"))).toBe(false);

    const unknown = startWith(
      `agents:\n  - { id: sim, kind: simulator }\nworkspaces:\n  - { id: w, path: ${JSON.stringify(join(work, "gone"))}, agents: [codex] }\n`,
    );
    await expect(unknown.listening).rejects.toThrow(/exited \(2\)/);
    expect(unknown.output()).toContain(`workspaces.0.path: ${join(work, "gone")} does not exist`);
    expect(unknown.output()).toContain('workspaces.0.agents.0: there is no agent "codex"');

    const both = start({
      PHEBY_CONFIG: config,
      PHEBY_AGENT_COMMAND: "hermes acp",
      PHEBY_DATA_DIR: join(work, "data"),
      PHEBY_PORT: "0",
    });
    await expect(both.listening).rejects.toThrow(/exited \(2\)/);
    expect(both.output()).toContain(
      "agents: cannot be used with the single-agent settings (PHEBY_AGENT_COMMAND (agent.command))",
    );
  });

  it("lists the worktrees left behind, and prunes the clean ones whose conversation is gone (pheby-server worktrees)", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-worktrees-"));
    const dataDir = join(work, "data");
    const run = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, ...args], {
        env: { PATH: process.env.PATH ?? "", PHEBY_DATA_DIR: dataDir },
        encoding: "utf8",
        timeout: 30_000,
      });
    expect(run(["worktrees"]).stderr).toContain(`no database in ${dataDir}`);
    expect(run(["worktrees", "--all"]).status).toBe(2);

    // A server with two conversations, one of them deleted.
    const { app, url } = await startWithSecret("s".repeat(32), () => ({ PHEBY_DATA_DIR: dataDir }));
    const client = new PhebyClient({ url, secret: "s".repeat(32), reconnect: false });
    await client.connect();
    const kept = (await client.request({ type: "conversation.create", name: "Kept" })).conversation_id;
    const gone = (await client.request({ type: "conversation.create", name: "Gone" })).conversation_id;
    await client.request({ type: "conversation.delete", conversation_id: gone });
    client.close();
    app.child.kill("SIGTERM");
    expect(await app.exited).toBe(0);

    // Their worktrees, as the server makes them.
    const repo = join(work, "repo");
    mkdirSync(repo);
    const git = (...args: string[]) =>
      spawnSync("git", args, {
        cwd: repo,
        env: { PATH: process.env.PATH ?? "", GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
        encoding: "utf8",
      });
    git("init", "-q");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first");
    const ctx = { git: new GitRunner(), worktreesDir: `${dataDir}-worktrees` };
    const keptTree = await createWorktree(ctx, repo, kept);
    const goneTree = await createWorktree(ctx, repo, gone);

    const listed = run(["worktrees"]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(
      `${kept}  ${keptTree.branch}  clean  conversation live  ${keptTree.root}`,
    );
    expect(listed.stdout).toContain(
      `${gone}  ${goneTree.branch}  clean  conversation deleted  ${goneTree.root}`,
    );
    const pruned = run(["worktrees", "--prune"]);
    expect(pruned.status).toBe(0);
    expect(pruned.stdout).toContain(`kept: conversation exists: ${kept}`);
    expect(pruned.stdout).toContain(`removed: ${gone}`);
    expect(pruned.stdout).toContain("Removed 1 worktree;");
    expect(existsSync(goneTree.root)).toBe(false);
    expect(existsSync(keptTree.root)).toBe(true);
    expect(git("branch", "--list", goneTree.branch).stdout).toContain(goneTree.branch);
  });
});
