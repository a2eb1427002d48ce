// Nothing pheby-server keeps on disk is readable by other local users, whatever the umask it was
// started with and wherever its secret comes from: the built dist/main.js in a child process.
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { PhebyClient } from "@pheby/client";
import { afterEach, describe, expect, it } from "vitest";
import { type App, SECRET, startApp } from "../reliability/harness.js";

const started: App[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const app of started.splice(0)) await app.kill();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Start the app under `umask 022` (what a login shell or a unit without `UMask=` gives it), with
 * PHEBY_SECRET set, or with the generated secret when `secret` is false.
 */
async function startWithUmask(dataDir: string, secret = true): Promise<App> {
  const app = await startApp({ dataDir, umask: 0o022, env: secret ? {} : { PHEBY_SECRET: "" } });
  started.push(app);
  return app;
}

/** Write what the server keeps: a conversation with a chat (SQLite, WAL) and an upload (a blob). */
async function useIt(port: number, secret: string): Promise<void> {
  const client = new PhebyClient({ url: `ws://127.0.0.1:${port}/ws`, secret, reconnect: false });
  await client.connect();
  try {
    const { conversation_id } = await client.request({ type: "conversation.create", name: "Private" });
    const finished = client.next("run.finished");
    await client.request({ type: "chat.send", conversation_id, text: "private words" });
    await finished;
    const upload = await fetch(
      `http://127.0.0.1:${port}/attachments?conversation_id=${conversation_id}&filename=notes.txt`,
      { method: "POST", headers: { Authorization: `Bearer ${secret}` }, body: "private notes" },
    );
    expect(upload.status).toBe(201);
  } finally {
    client.close();
  }
}

/** Every entry under `root` (root included) with its permission bits, as a relative path → mode map. */
function modes(root: string): Map<string, { mode: number; kind: "dir" | "file" | "socket" }> {
  const found = new Map<string, { mode: number; kind: "dir" | "file" | "socket" }>();
  const walk = (path: string) => {
    const stat = lstatSync(path);
    const kind = stat.isDirectory() ? "dir" : stat.isSocket() ? "socket" : "file";
    found.set(relative(root, path) || ".", { mode: stat.mode & 0o777, kind });
    if (kind === "dir") for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return found;
}

/** Directories 0700, everything else 0600; and the files that matter are among them. */
function expectPrivate(dataDir: string, expected: string[]): void {
  const found = modes(dataDir);
  for (const path of expected) expect([...found.keys()]).toContain(path);
  expect(found.get("attachments/blobs")?.kind).toBe("dir");
  expect(readdirSync(join(dataDir, "attachments/blobs")).length).toBeGreaterThan(0);
  const loose = [...found].filter(([, { mode, kind }]) => mode !== (kind === "dir" ? 0o700 : 0o600));
  expect(loose.map(([path, { mode }]) => `${path} ${mode.toString(8)}`)).toEqual([]);
}

const WITH_SECRET_SET = ["pheby.sqlite", "pheby.sqlite-wal", "pheby.sqlite-shm", "vapid.json", "attachments"];

describe("pheby-server's files on disk", () => {
  it("with PHEBY_SECRET set and umask 022, a fresh data directory is 0700 and every file in it 0600", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-perm-"));
    dirs.push(work);
    const dataDir = join(work, "data");
    const app = await startWithUmask(dataDir);
    await useIt(app.port, SECRET);
    // While it runs: the WAL and the shared-memory file exist and carry the transcript too.
    expectPrivate(dataDir, WITH_SECRET_SET);
    await app.stop();
    expectPrivate(dataDir, ["pheby.sqlite", "vapid.json"]);
  }, 120_000);

  it("fixes an existing 0755 data directory whose files are 0644, with PHEBY_SECRET set or a generated secret", async () => {
    const work = mkdtempSync(join(tmpdir(), "pheby-perm-"));
    dirs.push(work);
    const dataDir = join(work, "data");
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    let app = await startWithUmask(dataDir);
    await useIt(app.port, SECRET);
    await app.stop();
    // What an earlier version left under umask 022 (the attachment and MCP directories and blobs
    // were always created owner-only), and a secret file an operator wrote by hand.
    const loosen = () => {
      chmodSync(dataDir, 0o755);
      for (const name of readdirSync(dataDir)) {
        if (lstatSync(join(dataDir, name)).isFile()) chmodSync(join(dataDir, name), 0o644);
      }
    };
    loosen();
    app = await startWithUmask(dataDir);
    await useIt(app.port, SECRET);
    expectPrivate(dataDir, WITH_SECRET_SET);
    await app.stop();

    // The generated secret's source: its file joins the others, owner-only as well.
    loosen();
    app = await startWithUmask(dataDir, false);
    expectPrivate(dataDir, [...WITH_SECRET_SET, "secret"]);
    await app.stop();
  }, 180_000);
});
