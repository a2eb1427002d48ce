/**
 * The agent as another OS user (`AcpBackendOptions.user`): the scripted ACP agent runs as `nobody`
 * behind a real Pheby server running as root (as in CI and the documented systemd layout). It
 * answers a turn, asks the user through Pheby's MCP server (whose socket lives in the shared
 * directory), reads an upload (its copy in the shared directory), sends a file back; a cancel it
 * ignores ends with its whole process group killed; and what a device holder would go for with an
 * approved command (the server's environment, the secret file, the database) is out of its reach.
 */
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { FEATURE_SCHEDULES } from "@pheby/protocol";
import { answerOf } from "@pheby/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookupUser, type OsUser } from "../../src/agent-user/lookup.js";
import { DB_FILE } from "../../src/store/store.js";
import { tempDir } from "../helpers.js";
import { FAKE_AGENT_COMMAND } from "./harness.js";
import { framesOf, type PhebyAcp, startPhebyAcp } from "./pheby.js";

const isRoot = process.getuid?.() === 0;
const nobody = lookupUser("nobody");

/** Whether `pid` is gone (or a zombie nobody reaped yet: it runs no more). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}

/** The real uid a process runs as, from /proc. */
function uidOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("Uid:"));
  return Number(line?.split(/\s+/)[1]);
}

describe.skipIf(!isRoot || !nobody)(
  "the agent as another OS user (needs root to switch users: skipped otherwise)",
  () => {
    const user = nobody as OsUser;
    let base: string;
    let share: string;
    let dataDir: string;
    let work: string;
    let p: PhebyAcp;

    beforeAll(async () => {
      // Everything the agent must reach sits below a directory others may traverse (0755).
      base = mkdtempSync(join(tmpdir(), "pheby-agent-user-"));
      chmodSync(base, 0o755);
      share = join(base, "share");
      // The scripted agent itself, readable by nobody (the bundle's own temp dir is 0700).
      const command = FAKE_AGENT_COMMAND.map((arg) => {
        if (!arg.endsWith(".mjs")) return arg;
        const copy = join(base, basename(arg));
        copyFileSync(arg, copy);
        chmodSync(copy, 0o644);
        return copy;
      });
      // The agent's working directory (its state and call log; later, worktrees): its group's, setgid, 0770.
      work = join(base, "work");
      mkdirSync(work);
      chownSync(work, 0, user.gid);
      chmodSync(work, 0o2770);
      const env = { FAKE_STATE: join(work, "state.json"), FAKE_LOG: join(work, "calls.jsonl") };
      dataDir = tempDir();
      // A generated secret as pheby-server keeps it (0600 in the 0700 data directory).
      writeFileSync(join(dataDir, "secret"), `${"ab".repeat(32)}\n`, { mode: 0o600 });
      p = await startPhebyAcp(
        {
          command,
          cwd: work,
          env,
          user,
          allowedFileRoots: [work],
          requestTimeoutMs: 15_000,
          cancelTimeoutMs: 500,
          respawnBackoffMs: 10,
        },
        {
          dataDir,
          agentShare: { dir: share, gid: user.gid },
          allowedFileRoots: [work],
          cancelGraceMs: 200,
          features: [FEATURE_SCHEDULES],
        },
      );
    }, 60_000);
    afterAll(async () => {
      await p?.close();
      rmSync(base, { recursive: true, force: true });
    });

    it("runs as that user: its uid and gid, umask 0007, its HOME, USER and LOGNAME", async () => {
      const id = await p.create();
      const run = await p.chat(id, "ids", 30_000);
      expect(run.finished.status).toBe("completed");
      expect(run.complete.text).toBe(`${user.uid} ${user.gid} 0007 ${user.home} ${user.name} ${user.name}`);
    });

    it("cannot read the server's environment, the secret file or the database", async () => {
      const id = await p.create();
      const targets = [`/proc/${process.pid}/environ`, join(dataDir, "secret"), join(dataDir, DB_FILE)];
      const run = await p.chat(id, `probe ${targets.join(" ")}`, 30_000);
      expect(run.complete.text.split("\n")).toEqual(targets.map((t) => `${t}=EACCES`));
      // The same probe as Pheby's own user reads them all: the refusal is the user switch's doing.
      for (const t of targets) expect(() => readFileSync(t)).not.toThrow();
    });

    it("the shared directory and its MCP socket: group-owned, setgid, 0770 (socket 0660)", () => {
      for (const dir of [share, join(share, "mcp"), join(share, "uploads")]) {
        const st = statSync(dir);
        expect({ dir, mode: (st.mode & 0o7777).toString(8), gid: st.gid }).toEqual({
          dir,
          mode: "2770",
          gid: user.gid,
        });
      }
      const sock = statSync(join(share, "mcp", "pheby.sock"));
      expect({ mode: (sock.mode & 0o777).toString(8), gid: sock.gid }).toEqual({
        mode: "660",
        gid: user.gid,
      });
      expect((statSync(dataDir).mode & 0o777).toString(8)).toBe("700");
    });

    it("ask_user through Pheby's MCP server reaches the phone, and the answer the agent", async () => {
      const id = await p.create();
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: id,
        text: 'mcp ask_user {"question":"Deploy where?"}',
      });
      const asked = await p.waitFor("clarify.request", (m) => m.run_id === run_id, 30_000);
      await p.client.request({ type: "clarify.respond", clarify_id: asked.clarify_id, response: "staging" });
      const finished = await p.waitFor("run.finished", (m) => m.run_id === run_id, 30_000);
      expect(finished.status).toBe("completed");
      const complete = answerOf(p.frames, run_id);
      expect(complete?.text).toBe('ask_user -> {"answered":true,"answer":"staging"}');
    });

    it("reads an upload: its copy in the shared directory (0640, the shared group)", async () => {
      const id = await p.create();
      const pdf = Buffer.from("%PDF-1.4\nthe user's document\n");
      const { attachment_id } = await p.client.upload(id, new Uint8Array(pdf), {
        filename: "doc.pdf",
        contentType: "application/pdf",
      });
      const run = await p.chat(id, "readlinks", 30_000, [attachment_id]);
      expect(run.complete.text).toBe(pdf.toString());
      const copy = statSync(join(share, "uploads", attachment_id));
      expect({ mode: (copy.mode & 0o777).toString(8), gid: copy.gid }).toEqual({
        mode: "640",
        gid: user.gid,
      });
    });

    it("send_file: a file the agent wrote (0660 by its umask) reaches the phone", async () => {
      const id = await p.create();
      const report = join(work, "report.txt");
      expect((await p.chat(id, `write ${report} the agent's report`, 30_000)).complete.text).toBe("660");
      expect(statSync(report).uid).toBe(user.uid);
      const run = await p.chat(id, `mcp send_file {"path":"${report}"}`, 30_000);
      expect(run.complete.text).toBe('send_file -> {"delivered":true,"filename":"report.txt"}');
      const added = framesOf(p.frames, "attachment.added").filter((m) => m.conversation_id === id);
      const copy = await p.client.download(added[0]!.attachment);
      expect(Buffer.from(copy.bytes!).toString()).toBe("the agent's report");
    });

    it("a cancel the agent ignores: its whole process group (a child of its own too) is killed", async () => {
      const id = await p.create();
      const pidFile = join(work, "child.pid");
      const { run_id } = await p.client.request({
        type: "chat.send",
        conversation_id: id,
        text: `group ${pidFile}`,
      });
      await expect.poll(() => readFileSafe(pidFile), { timeout: 30_000 }).not.toBe("");
      const child = Number(readFileSafe(pidFile));
      expect(uidOf(child)).toBe(user.uid);
      await p.client.request({ type: "run.cancel", conversation_id: id, run_id });
      const finished = await p.waitFor("run.finished", (m) => m.run_id === run_id, 30_000);
      expect(finished.status).toBe("cancelled");
      await expect.poll(() => gone(child), { timeout: 30_000 }).toBe(true);
      // The next turn gets a fresh agent process, still as that user.
      expect((await p.chat(id, "ids", 30_000)).complete.text.split(" ")[0]).toBe(String(user.uid));
    });
  },
);

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return "";
  }
}
