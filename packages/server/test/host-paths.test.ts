/**
 * HostPaths: the server's own paths in an agent's error text become placeholders before the text reaches a
 * client, so no client learns the host's layout; the rest of the message is kept. Real directories, files and
 * symlinks in a temp dir stand for the home, data, working and install directories.
 */
import { chmodSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentInstalls, HostPaths, StreamScrubber } from "../src/util/host-paths.js";
import { useTempDirs } from "./helpers.js";

const tempDir = useTempDirs();

/** A fake host: a home with Pheby's data dir in it, a working dir, and a Hermes-like virtualenv. */
function host() {
  const root = realpathSync(tempDir());
  const home = join(root, "home", "pheby");
  const dataDir = join(home, ".pheby-data");
  const work = join(root, "srv", "work");
  const venv = join(root, "opt", "hermes");
  for (const dir of [dataDir, work, join(venv, "bin"), join(venv, "lib", "python3.11", "site-packages")])
    mkdirSync(dir, { recursive: true });
  const hermes = join(venv, "bin", "hermes");
  writeFileSync(hermes, "#!/bin/sh\n");
  chmodSync(hermes, 0o755);
  return { root, home, dataDir, work, venv, hermes };
}

describe("HostPaths", () => {
  it("replaces home, data, working directory and the agent's install, and keeps the rest of the message", () => {
    const h = host();
    const paths = new HostPaths({
      dataDir: h.dataDir,
      agentCommand: [h.hermes, "acp"],
      workdirs: [h.work],
      homes: [h.home],
    });
    const text = [
      `Traceback: File "${h.venv}/lib/python3.11/site-packages/acp/server.py", line 12, in prompt`,
      `open('${h.dataDir}/attachments/blobs/0123abcd') failed: ENOENT`,
      `cannot read ${h.work}/notes.md; check ${h.home}/.hermes/config.yaml.`,
      `file://${h.work}/out.txt`,
    ].join("\n");
    expect(paths.scrub(text)).toBe(
      [
        `Traceback: File "<agent>/lib/python3.11/site-packages/acp/server.py", line 12, in prompt`,
        "open('<data>/attachments/blobs/0123abcd') failed: ENOENT",
        "cannot read <workdir>/notes.md; check ~/.hermes/config.yaml.",
        "file://<workdir>/out.txt",
      ].join("\n"),
    );
  });

  it("a path counts only as a whole: not inside a longer name, not as the tail of another path", () => {
    const h = host();
    const paths = new HostPaths({ homes: [h.home] });
    expect(paths.scrub(`${h.home}`)).toBe("~");
    expect(paths.scrub(`in ${h.home}.`)).toBe("in ~.");
    expect(paths.scrub(`${h.home}2/x and ${h.home}.bak and ${h.home}-old`)).toBe(
      `${h.home}2/x and ${h.home}.bak and ${h.home}-old`,
    );
    expect(paths.scrub(`/mnt${h.home}/x`)).toBe(`/mnt${h.home}/x`);
    expect(paths.scrub(`"${h.home}/a" '${h.home}/b' (${h.home}/c) ${h.home}:1`)).toBe(
      `"~/a" '~/b' (~/c) ~:1`,
    );
  });

  it("knows a directory of two or more segments named without its leading / (a path relative to /)", () => {
    const h = host();
    const paths = new HostPaths({ workdirs: [h.work], homes: [h.home, "/root"] });
    const rootless = (path: string) => path.slice(1);
    expect(paths.scrub(`Write ${rootless(h.work)}/activity.txt`)).toBe("Write <workdir>/activity.txt");
    expect(paths.scrub(`${rootless(h.home)}/.config`)).toBe("~/.config");
    // Not as the tail of another path, not inside a longer name, and a one-segment directory (`root`) never.
    expect(paths.scrub(`/mnt/${rootless(h.work)}/a x${rootless(h.work)}/a ${rootless(h.work)}2/a`)).toBe(
      `/mnt/${rootless(h.work)}/a x${rootless(h.work)}/a ${rootless(h.work)}2/a`,
    );
    expect(paths.scrub("root/x and the root")).toBe("root/x and the root");
  });

  it("knows a directory by its real path too (a symlinked working directory)", () => {
    const h = host();
    const link = join(h.root, "work-link");
    symlinkSync(h.work, link);
    const paths = new HostPaths({ workdirs: [link], homes: [] });
    expect(paths.scrub(`${link}/a and ${h.work}/b`)).toBe("<workdir>/a and <workdir>/b");
  });

  it("the most specific path wins: the data directory inside the home directory", () => {
    const h = host();
    const paths = new HostPaths({ dataDir: h.dataDir, homes: [h.home] });
    expect(paths.scrub(`${h.dataDir}/pheby.db and ${h.home}/x`)).toBe("<data>/pheby.db and ~/x");
  });

  it("finds an npm agent's project and package from its node_modules/.bin link, and a bare command on PATH", () => {
    const h = host();
    const project = join(h.root, "agents", "codex");
    const pkg = join(project, "node_modules", "@zed-industries", "codex-acp");
    mkdirSync(join(pkg, "bin"), { recursive: true });
    mkdirSync(join(project, "node_modules", ".bin"));
    writeFileSync(join(pkg, "bin", "codex-acp.js"), "");
    const bin = join(project, "node_modules", ".bin", "codex-acp");
    symlinkSync(join(pkg, "bin", "codex-acp.js"), bin);
    expect(agentInstalls([bin], "").sort()).toEqual([project, pkg].sort());
    expect(
      agentInstalls(["codex-acp"], `/nonexistent:${join(project, "node_modules", ".bin")}`).sort(),
    ).toEqual([project, pkg].sort());
    const paths = new HostPaths({ agentCommand: [bin], homes: [] });
    expect(paths.scrub(`at ${pkg}/dist/index.js:3 (${project}/codex.toml)`)).toBe(
      "at <agent>/dist/index.js:3 (<agent>/codex.toml)",
    );
  });

  it("never replaces a system prefix: an interpreter command (node) and absolute script arguments", () => {
    const h = host();
    const script = join(h.root, "srv", "agent", "main.js");
    mkdirSync(join(h.root, "srv", "agent"));
    writeFileSync(script, "");
    const paths = new HostPaths({ agentCommand: [process.execPath, script], homes: ["/"] });
    expect(paths.scrub(`${script}:1 /usr/lib/node_modules/x /usr/local/lib/y / /`)).toBe(
      "<agent>/main.js:1 /usr/lib/node_modules/x /usr/local/lib/y / /",
    );
  });

  it("clientText: paths replaced, secrets redacted, then cut at the limit", () => {
    const h = host();
    const paths = new HostPaths({ dataDir: h.dataDir, homes: [h.home] });
    const text = `Quota exceeded for api_key=sk-live-0123456789abcdef reading ${h.dataDir}/x ${"y".repeat(400)}`;
    const out = paths.clientText(text, 300);
    expect(out).toHaveLength(300);
    expect(out.startsWith("Quota exceeded for api_key=[REDACTED] reading <data>/x yyy")).toBe(true);
    expect(out).not.toContain(h.root);
    expect(out.endsWith("…")).toBe(true);
    expect(paths.clientText("short", 300)).toBe("short");
  });

  it("with nothing known but the home directory, only the home directory is replaced; /root is a home too", () => {
    const paths = new HostPaths({ homes: [join("/", "home", "someone")] });
    expect(paths.scrub("/home/someone/.config and /etc/hosts")).toBe("~/.config and /etc/hosts");
    expect(new HostPaths({ homes: ["/root"] }).scrub("/root/.hermes/config.yaml in /rootfs")).toBe(
      "~/.hermes/config.yaml in /rootfs",
    );
  });

  it("a server path cut off with an ellipsis (an agent's shortened title) is scrubbed too, past its first segment", () => {
    const h = host();
    const paths = new HostPaths({ workdirs: [h.work], homes: [h.home] });
    const cut = h.work.slice(0, h.work.length - 3);
    expect(paths.scrub(`terminal: ls ${cut}...`)).toBe("terminal: ls <workdir>...");
    expect(paths.scrub(`(${h.home.slice(0, -2)}…)`)).toBe("(~…)");
    // Too short to name anything of the server's, or not a start of one of its paths: kept.
    expect(paths.scrub("see /tmp/... and /t... and /etc/hos...")).toBe(
      "see /tmp/... and /t... and /etc/hos...",
    );
    expect(paths.scrub(`${h.work}/src/a.t...`)).toBe("<workdir>/src/a.t...");
  });

  it("StreamScrubber: text streamed in pieces, cut anywhere, scrubs as the whole text does and only grows", () => {
    const h = host();
    const paths = new HostPaths({ dataDir: h.dataDir, workdirs: [h.work], homes: [h.home] });
    const rootless = h.work.slice(1);
    const text = [
      `Reading ${h.dataDir}/blobs/ab, then ${h.work}.`,
      ` Not ${h.work}er/x nor ${h.home}.bak; but ${h.home}.`,
      ` Relative: ${rootless}/a.txt (${h.work}) 📄 cut: ${h.work.slice(0, -2)}... done`,
    ].join("");
    const whole = paths.scrub(text);
    expect(whole).toBe(
      `Reading <data>/blobs/ab, then <workdir>. Not ${h.work}er/x nor ${h.home}.bak; but ~.` +
        " Relative: <workdir>/a.txt (<workdir>) 📄 cut: <workdir>... done",
    );
    // Every cut into two pieces, and the text one character at a time.
    const splits = [...Array(text.length + 1).keys()].map((i) => [text.slice(0, i), text.slice(i)]);
    for (const pieces of [...splits, [...text]]) {
      const stream = new StreamScrubber(paths);
      let out = "";
      for (const piece of pieces) out += stream.push(piece);
      expect(out + stream.end(), JSON.stringify(pieces.slice(0, 2))).toBe(whole);
    }
  });

  it("StreamScrubber holds back only a tail where a server path may be starting, until more text or the end", () => {
    const h = host();
    const stream = new StreamScrubber(new HostPaths({ workdirs: [h.work], homes: [] }));
    expect(stream.push("plain words, no path")).toBe("plain words, no path");
    expect(stream.push(` see ${h.work.slice(0, 4)}`)).toBe(" see ");
    expect(stream.holding).toBe(true);
    expect(stream.push(h.work.slice(4))).toBe(""); // whole, but a longer name may follow
    expect(stream.push("/a.txt and")).toBe("<workdir>/a.txt and");
    expect(stream.push(` ${h.work}`)).toBe(" ");
    expect(stream.end()).toBe("<workdir>");
    expect(stream.holding).toBe(false);
  });
});
