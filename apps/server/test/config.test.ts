import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseArgs } from "../src/args.js";
import { agentArgv, agentSharedDir, ConfigError, loadConfig } from "../src/config.js";
import { resolveSecret, rotateSecret } from "../src/secret.js";

const dir = () => mkdtempSync(join(tmpdir(), "pheby-config-"));

describe("loadConfig", () => {
  it("has embedded defaults: simulator on 127.0.0.1:8620 with a local data directory", () => {
    const cwd = dir();
    expect(loadConfig({}, cwd)).toMatchObject({
      bind_host: "127.0.0.1",
      port: 8620,
      data_dir: join(cwd, ".pheby-data"),
      debug: false,
      log_chat_content: false,
      attachment_retention_days: 7,
      http_idle_timeout_seconds: 60,
      console: false,
      agent: { kind: "simulator" },
    });
  });

  it("overlays env on YAML", () => {
    const cwd = dir();
    writeFileSync(
      join(cwd, "pheby.yaml"),
      "port: 9000\ndebug: true\nagent:\n  kind: acp\n  command: hermes\n  args: [acp, --verbose]\n  env: { HERMES_HOME: /srv/h }\n",
    );
    const config = loadConfig({ PHEBY_CONFIG: "pheby.yaml", PHEBY_PORT: "9100", PHEBY_DEBUG: "no" }, cwd);
    expect(config.port).toBe(9100);
    expect(config.debug).toBe(false);
    expect(config.agent).toMatchObject({ kind: "acp", command: "hermes", env: { HERMES_HOME: "/srv/h" } });
    expect(agentArgv(config.agent)).toEqual(["hermes", "acp", "--verbose"]);
    expect(
      agentArgv(loadConfig({ PHEBY_AGENT: "acp", PHEBY_AGENT_COMMAND: "qwen --acp" }, cwd).agent),
    ).toEqual(["qwen", "--acp"]);
  });

  it("fails loudly, naming every bad setting and never echoing the secret", () => {
    const bad = () =>
      loadConfig(
        { PHEBY_PORT: "80a", PHEBY_DEBUG: "maybe", PHEBY_AGENT: "gpt", PHEBY_SECRET: "short-hunter2" },
        dir(),
      );
    expect(bad).toThrow(ConfigError);
    const message = (() => {
      try {
        bad();
      } catch (err) {
        return (err as Error).message;
      }
    })()!;
    expect(message).toContain("PHEBY_PORT (port)");
    expect(message).toContain("PHEBY_DEBUG (debug)");
    expect(message).toContain("PHEBY_AGENT (agent.kind)");
    expect(message).toContain("PHEBY_SECRET (secret): must be at least 16 characters");
    expect(message).not.toContain("hunter2");
  });

  it("reads CORS origins from a comma-separated env or a YAML list, and refuses anything but an origin", () => {
    expect(
      loadConfig({ PHEBY_CORS_ORIGINS: "https://a.example, http://localhost:5173" }, dir()).cors_origins,
    ).toEqual(["https://a.example", "http://localhost:5173"]);
    expect(loadConfig({}, dir()).cors_origins).toEqual([]);
    for (const bad of ["https://a.example/console", "*", "a.example", "ftp://a.example"]) {
      expect(() => loadConfig({ PHEBY_CORS_ORIGINS: bad }, dir())).toThrow(
        /PHEBY_CORS_ORIGINS \(cors_origins\.0\)/,
      );
    }
  });

  it("reads the trusted proxy from env or YAML: loopback (default), none or IP addresses, nothing else", () => {
    expect(loadConfig({}, dir()).trusted_proxy).toBe("loopback");
    expect(loadConfig({ PHEBY_TRUSTED_PROXY: " None " }, dir()).trusted_proxy).toBe("none");
    expect(loadConfig({ PHEBY_TRUSTED_PROXY: "172.17.0.1, ::1" }, dir()).trusted_proxy).toEqual([
      "172.17.0.1",
      "::1",
    ]);
    const cwd = dir();
    writeFileSync(join(cwd, "pheby.yaml"), "trusted_proxy: [10.0.0.2, 10.0.0.3]\n");
    expect(loadConfig({ PHEBY_CONFIG: "pheby.yaml" }, cwd).trusted_proxy).toEqual(["10.0.0.2", "10.0.0.3"]);
    writeFileSync(join(cwd, "pheby.yaml"), "trusted_proxy: none\n");
    expect(loadConfig({ PHEBY_CONFIG: "pheby.yaml" }, cwd).trusted_proxy).toBe("none");
    for (const bad of ["all", "caddy.local", "10.0.0.0/8", "10.0.0.1,", "loopback, 10.0.0.1"]) {
      expect(() => loadConfig({ PHEBY_TRUSTED_PROXY: bad }, dir())).toThrow(
        /PHEBY_TRUSTED_PROXY \(trusted_proxy\): must be "loopback", "none" or a list of IP addresses/,
      );
    }
    writeFileSync(join(cwd, "pheby.yaml"), "trusted_proxy: []\n");
    expect(() => loadConfig({ PHEBY_CONFIG: "pheby.yaml" }, cwd)).toThrow(/trusted_proxy/);
  });

  it("reads the push settings from env or YAML; defaults: previews on, private endpoints refused", () => {
    expect(loadConfig({}, dir())).toMatchObject({ push_preview: true, push_allow_private: false });
    expect(loadConfig({}, dir()).push_subject).toBeUndefined();
    expect(
      loadConfig(
        {
          PHEBY_PUSH_PREVIEW: "false",
          PHEBY_PUSH_ALLOW_PRIVATE: "true",
          PHEBY_PUSH_SUBJECT: "mailto:me@example.com",
        },
        dir(),
      ),
    ).toMatchObject({ push_preview: false, push_allow_private: true, push_subject: "mailto:me@example.com" });
    const yamlDir = dir();
    writeFileSync(
      join(yamlDir, "p.yaml"),
      "push_preview: false\npush_subject: https://example.com/contact\n",
    );
    expect(loadConfig({ PHEBY_CONFIG: "p.yaml" }, yamlDir)).toMatchObject({
      push_preview: false,
      push_subject: "https://example.com/contact",
    });
    expect(() => loadConfig({ PHEBY_PUSH_PREVIEW: "maybe" }, dir())).toThrow(
      /PHEBY_PUSH_PREVIEW \(push_preview\)/,
    );
    for (const bad of ["http://example.com", "admin@example.com"]) {
      expect(() => loadConfig({ PHEBY_PUSH_SUBJECT: bad }, dir())).toThrow(
        /PHEBY_PUSH_SUBJECT \(push_subject\)/,
      );
    }
  });

  it("reads the delta window (bounds exact) and the compression switch; defaults 100 ms and on", () => {
    expect(loadConfig({}, dir())).toMatchObject({ delta_interval_ms: 100, ws_compression: true });
    expect(loadConfig({}, dir())).toMatchObject({
      resume: true,
      replay_max_events: 2_000,
      replay_max_bytes: 8 * 1024 * 1024,
    });
    expect(loadConfig({ PHEBY_RESUME: "false", PHEBY_REPLAY_MAX_EVENTS: "1" }, dir())).toMatchObject({
      resume: false,
      replay_max_events: 1,
    });
    expect(() => loadConfig({ PHEBY_REPLAY_MAX_EVENTS: "0" }, dir())).toThrow(
      /PHEBY_REPLAY_MAX_EVENTS \(replay_max_events\)/,
    );
    expect(loadConfig({ PHEBY_REPLAY_MAX_BYTES: "1024" }, dir()).replay_max_bytes).toBe(1024);
    expect(() => loadConfig({ PHEBY_REPLAY_MAX_BYTES: "1023" }, dir())).toThrow(
      /PHEBY_REPLAY_MAX_BYTES \(replay_max_bytes\)/,
    );
    expect(loadConfig({ PHEBY_DELTA_INTERVAL_MS: "0" }, dir()).delta_interval_ms).toBe(0);
    expect(loadConfig({ PHEBY_DELTA_INTERVAL_MS: "10000" }, dir()).delta_interval_ms).toBe(10_000);
    expect(() => loadConfig({ PHEBY_DELTA_INTERVAL_MS: "10001" }, dir())).toThrow(
      /PHEBY_DELTA_INTERVAL_MS \(delta_interval_ms\)/,
    );
    expect(loadConfig({ PHEBY_WS_COMPRESSION: "off" }, dir()).ws_compression).toBe(false);
  });

  it("reads the heartbeat interval (default 30 s) and checks its bounds exactly", () => {
    expect(loadConfig({}, dir()).heartbeat_interval_ms).toBe(30_000);
    expect(loadConfig({ PHEBY_HEARTBEAT_INTERVAL_MS: "100" }, dir()).heartbeat_interval_ms).toBe(100);
    expect(() => loadConfig({ PHEBY_HEARTBEAT_INTERVAL_MS: "99" }, dir())).toThrow(
      /PHEBY_HEARTBEAT_INTERVAL_MS \(heartbeat_interval_ms\)/,
    );
  });

  it("reads the agent's allowed file roots from a PATH-like env (the env-only Hermes setup) or a YAML list", () => {
    const cwd = dir();
    expect(
      loadConfig({ PHEBY_AGENT_ALLOWED_FILE_ROOTS: "/srv/work: /var/lib/pheby/.hermes/cache:" }, cwd).agent
        .allowed_file_roots,
    ).toEqual(["/srv/work", "/var/lib/pheby/.hermes/cache"]);
    writeFileSync(join(cwd, "pheby.yaml"), "agent:\n  allowed_file_roots: [/a, /b]\n");
    expect(loadConfig({ PHEBY_CONFIG: "pheby.yaml" }, cwd).agent.allowed_file_roots).toEqual(["/a", "/b"]);
    expect(
      loadConfig({ PHEBY_CONFIG: "pheby.yaml", PHEBY_AGENT_ALLOWED_FILE_ROOTS: "/c" }, cwd).agent
        .allowed_file_roots,
    ).toEqual(["/c"]);
    expect(loadConfig({}, cwd).agent.allowed_file_roots).toEqual([]);
  });

  it("reads the HTTP idle timeout in whole seconds, 1..3600", () => {
    expect(loadConfig({ PHEBY_HTTP_IDLE_TIMEOUT_SECONDS: "1" }, dir()).http_idle_timeout_seconds).toBe(1);
    expect(loadConfig({ PHEBY_HTTP_IDLE_TIMEOUT_SECONDS: "3600" }, dir()).http_idle_timeout_seconds).toBe(
      3600,
    );
    for (const bad of ["0", "3601", "1.5", "soon"]) {
      expect(() => loadConfig({ PHEBY_HTTP_IDLE_TIMEOUT_SECONDS: bad }, dir())).toThrow(
        /PHEBY_HTTP_IDLE_TIMEOUT_SECONDS \(http_idle_timeout_seconds\)/,
      );
    }
    const cwd = dir();
    writeFileSync(join(cwd, "pheby.yaml"), "http_idle_timeout_seconds: 300\n");
    expect(loadConfig({ PHEBY_CONFIG: "pheby.yaml" }, cwd).http_idle_timeout_seconds).toBe(300);
  });

  it("reads the lockout (5 failures in 60 s lock for 300 s by default) from env or YAML, bounds exact", () => {
    expect(loadConfig({}, dir())).toMatchObject({
      lockout_max_failures: 5,
      lockout_window_seconds: 60,
      lockout_duration_seconds: 300,
    });
    const settings = [
      ["PHEBY_LOCKOUT_MAX_FAILURES", "lockout_max_failures", 1, 1_000],
      ["PHEBY_LOCKOUT_WINDOW_SECONDS", "lockout_window_seconds", 1, 86_400],
      ["PHEBY_LOCKOUT_DURATION_SECONDS", "lockout_duration_seconds", 1, 86_400],
    ] as const;
    for (const [env, key, min, max] of settings) {
      expect(loadConfig({ [env]: String(min) }, dir())[key]).toBe(min);
      expect(loadConfig({ [env]: String(max) }, dir())[key]).toBe(max);
      for (const bad of [String(min - 1), String(max + 1), "2.5", "soon"]) {
        expect(() => loadConfig({ [env]: bad }, dir())).toThrow(new RegExp(`${env} \\(${key}\\)`));
      }
    }
    const cwd = dir();
    writeFileSync(
      join(cwd, "pheby.yaml"),
      "lockout_max_failures: 2\nlockout_window_seconds: 30\nlockout_duration_seconds: 3\n",
    );
    expect(
      loadConfig({ PHEBY_CONFIG: "pheby.yaml", PHEBY_LOCKOUT_DURATION_SECONDS: "4" }, cwd),
    ).toMatchObject({
      lockout_max_failures: 2,
      lockout_window_seconds: 30,
      lockout_duration_seconds: 4,
    });
  });

  it("offers Pheby's MCP server to ACP agents by default, with every tool; env and YAML choose", () => {
    expect(loadConfig({}, dir()).agent.mcp).toEqual({
      enabled: true,
      tools: ["ask_user", "schedule_create", "schedule_list", "schedule_delete", "notify_user", "send_file"],
      ask_timeout_seconds: 240,
    });
    expect(loadConfig({ PHEBY_AGENT_MCP: "false" }, dir()).agent.mcp.enabled).toBe(false);
    expect(
      loadConfig(
        { PHEBY_AGENT_MCP_TOOLS: "ask_user, notify_user", PHEBY_AGENT_MCP_ASK_TIMEOUT_SECONDS: "10" },
        dir(),
      ).agent.mcp,
    ).toMatchObject({ tools: ["ask_user", "notify_user"], ask_timeout_seconds: 10 });
    const cwd = dir();
    writeFileSync(
      join(cwd, "pheby.yaml"),
      "agent:\n  mcp:\n    tools: [schedule_list]\n    ask_timeout_seconds: 3600\n",
    );
    expect(loadConfig({ PHEBY_CONFIG: "pheby.yaml" }, cwd).agent.mcp).toMatchObject({
      enabled: true,
      tools: ["schedule_list"],
      ask_timeout_seconds: 3600,
    });
    expect(() => loadConfig({ PHEBY_AGENT_MCP_TOOLS: "ask_user,rm_rf" }, dir())).toThrow(
      /PHEBY_AGENT_MCP_TOOLS \(agent\.mcp\.tools\.1\)/,
    );
    expect(() => loadConfig({ PHEBY_AGENT_MCP_ASK_TIMEOUT_SECONDS: "9" }, dir())).toThrow(
      /PHEBY_AGENT_MCP_ASK_TIMEOUT_SECONDS/,
    );
    expect(() => loadConfig({ PHEBY_AGENT_MCP_ASK_TIMEOUT_SECONDS: "3601" }, dir())).toThrow(
      /PHEBY_AGENT_MCP_ASK_TIMEOUT_SECONDS/,
    );
    expect(() => loadConfig({ PHEBY_AGENT_MCP: "maybe" }, dir())).toThrow(
      /PHEBY_AGENT_MCP \(agent\.mcp\.enabled\)/,
    );
  });

  it("reads the schedules' missed-run grace (default 1 hour) and default time zone", () => {
    expect(loadConfig({}, dir()).schedules).toEqual({ missed_grace_seconds: 3600 });
    expect(
      loadConfig(
        { PHEBY_SCHEDULES_MISSED_GRACE_SECONDS: "0", PHEBY_SCHEDULES_TIMEZONE: "Europe/Berlin" },
        dir(),
      ).schedules,
    ).toEqual({ missed_grace_seconds: 0, timezone: "Europe/Berlin" });
    expect(() => loadConfig({ PHEBY_SCHEDULES_TIMEZONE: "Mars/Olympus" }, dir())).toThrow(
      "PHEBY_SCHEDULES_TIMEZONE (schedules.timezone): must be an IANA time zone such as Europe/Berlin or UTC",
    );
    expect(() => loadConfig({ PHEBY_SCHEDULES_MISSED_GRACE_SECONDS: "604801" }, dir())).toThrow(
      /PHEBY_SCHEDULES_MISSED_GRACE_SECONDS/,
    );
  });

  it("reads the public WebSocket URL pairing puts in QR codes, and refuses anything but a ws(s):// URL", () => {
    const cwd = dir();
    expect(loadConfig({}, cwd).public_url).toBeUndefined();
    expect(loadConfig({ PHEBY_PUBLIC_URL: "wss://pheby.example.com/ws" }, cwd).public_url).toBe(
      "wss://pheby.example.com/ws",
    );
    writeFileSync(join(cwd, "p.yaml"), "public_url: ws://192.168.1.10:8620/ws\n");
    expect(loadConfig({ PHEBY_CONFIG: "p.yaml" }, cwd).public_url).toBe("ws://192.168.1.10:8620/ws");
    for (const bad of [
      "https://pheby.example.com/ws",
      "pheby.example.com",
      "wss://h/ws?x=1",
      "wss://u:p@h/ws",
    ])
      expect(() => loadConfig({ PHEBY_PUBLIC_URL: bad }, cwd)).toThrow(
        /PHEBY_PUBLIC_URL \(public_url\): must be the WebSocket URL phones reach the server at/,
      );
  });

  it("resolves the agent's OS user (env or YAML) to its uid, gid and home; an unknown user or root fails", () => {
    const cwd = dir();
    const env = { PHEBY_AGENT: "acp", PHEBY_AGENT_COMMAND: "hermes acp" };
    expect(loadConfig(env, cwd).agent.user).toBeUndefined();
    // nobody, as the system's name service knows it (getent passwd nobody: 65534 on Debian).
    const [, , uid, gid, , home] = execFileSync("getent", ["passwd", "nobody"], { encoding: "utf8" })
      .trim()
      .split(":");
    const config = loadConfig({ ...env, PHEBY_AGENT_USER: "nobody" }, cwd);
    expect(config.agent.user).toEqual({ name: "nobody", uid: Number(uid), gid: Number(gid), home });
    expect(agentSharedDir(config)).toBe(`${join(cwd, ".pheby-data")}-agent`);
    writeFileSync(
      join(cwd, "u.yaml"),
      "agent:\n  kind: acp\n  command: hermes\n  user: nobody\n  shared_dir: share\n",
    );
    const fromYaml = loadConfig({ PHEBY_CONFIG: "u.yaml" }, cwd);
    expect(fromYaml.agent.user?.uid).toBe(Number(uid));
    expect(agentSharedDir(fromYaml)).toBe(join(cwd, "share"));
    expect(() => loadConfig({ ...env, PHEBY_AGENT_USER: "pheby-no-such-user" }, cwd)).toThrow(
      /PHEBY_AGENT_USER \(agent\.user\): no such user: "pheby-no-such-user"/,
    );
    expect(() => loadConfig({ ...env, PHEBY_AGENT_USER: "--help" }, cwd)).toThrow(/no such user/);
    expect(() => loadConfig({ ...env, PHEBY_AGENT_USER: "root" }, cwd)).toThrow(/must not be root/);
    expect(() =>
      loadConfig({ ...env, PHEBY_AGENT_USER: "nobody", PHEBY_AGENT_SHARED_DIR: ".pheby-data/share" }, cwd),
    ).toThrow(/PHEBY_AGENT_SHARED_DIR \(agent\.shared_dir\): must not lie inside the data directory/);
  });

  it("checks port bounds exactly", () => {
    expect(loadConfig({ PHEBY_PORT: "65535" }, dir()).port).toBe(65535);
    expect(() => loadConfig({ PHEBY_PORT: "65536" }, dir())).toThrow(/PHEBY_PORT/);
  });

  it("requires a command for the acp agent, and rejects unknown YAML keys", () => {
    expect(() => loadConfig({ PHEBY_AGENT: "acp" }, dir())).toThrow(/PHEBY_AGENT_COMMAND/);
    const cwd = dir();
    writeFileSync(join(cwd, "c.yaml"), "prot: 1\n");
    expect(() => loadConfig({ PHEBY_CONFIG: "c.yaml" }, cwd)).toThrow(/Unrecognized key/);
    expect(() => loadConfig({ PHEBY_CONFIG: "missing.yaml" }, cwd)).toThrow(/cannot read/);
    writeFileSync(join(cwd, "b.yaml"), "port: [\n");
    expect(() => loadConfig({ PHEBY_CONFIG: "b.yaml" }, cwd)).toThrow(/not valid YAML/);
  });
});

describe("resolveSecret", () => {
  it("generates a 256-bit secret once, stored with mode 0600, and reuses it", () => {
    const data = join(dir(), "data");
    const first = resolveSecret(undefined, data);
    expect(first.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(first.file).toBe(join(data, "secret"));
    expect(statSync(first.file!).mode & 0o777).toBe(0o600);
    expect(readFileSync(first.file!, "utf8").trim()).toBe(first.secret);
    expect(resolveSecret(undefined, data)).toEqual(first);
  });

  it("rotates the generated secret: a new 256-bit one, mode 0600, picked up at the next start", () => {
    const data = join(dir(), "data");
    const first = resolveSecret(undefined, data);
    writeFileSync(join(data, "secret.new"), "half-written by an interrupted rotation");
    expect(rotateSecret(data)).toBe(first.file);
    const next = resolveSecret(undefined, data);
    expect(next.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(next.secret).not.toBe(first.secret);
    expect(statSync(first.file!).mode & 0o777).toBe(0o600);
    expect(existsSync(join(data, "secret.new"))).toBe(false);
    // No generated secret (the server's is configured, or it never ran): nothing to rotate, nothing written.
    const fresh = join(dir(), "fresh");
    expect(rotateSecret(fresh)).toBeUndefined();
    expect(existsSync(fresh)).toBe(false);
  });

  it("prefers the configured secret and writes nothing", () => {
    const data = join(dir(), "data");
    expect(resolveSecret("configured-secret-123", data)).toEqual({ secret: "configured-secret-123" });
  });
});

describe("parseArgs", () => {
  it("knows the operator commands and nothing near them", () => {
    expect(parseArgs([])).toEqual({ run: "server" });
    expect(parseArgs(["rotate-secret"])).toEqual({ run: "rotate-secret" });
    expect(parseArgs(["devices"])).toEqual({ run: "devices", action: "list" });
    expect(parseArgs(["devices", "list"])).toEqual({ run: "devices", action: "list" });
    expect(parseArgs(["devices", "revoke-all"])).toEqual({ run: "devices", action: "revoke-all" });
    expect(parseArgs(["devices", "revoke"])).toEqual({ run: "unknown", arg: "devices revoke" });
    expect(parseArgs(["devices", "revoke-all", "now"])).toEqual({
      run: "unknown",
      arg: "devices revoke-all now",
    });
    expect(parseArgs(["rotate-secret", "--force"])).toEqual({ run: "unknown", arg: "rotate-secret --force" });
    expect(parseArgs(["worktrees"])).toEqual({ run: "worktrees", prune: false });
    expect(parseArgs(["worktrees", "--prune"])).toEqual({ run: "worktrees", prune: true });
    expect(parseArgs(["worktrees", "prune"])).toEqual({ run: "unknown", arg: "worktrees prune" });
    expect(parseArgs(["worktrees", "--prune", "--all"])).toEqual({
      run: "unknown",
      arg: "worktrees --prune --all",
    });
  });
});
