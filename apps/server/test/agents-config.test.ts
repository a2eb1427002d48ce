// Several agents and workspaces in the YAML file (`agents:`, `workspaces:`): what they come down to,
// the options @pheby/server gets, and every way they fail (a ConfigError naming the key; the app
// exits 2 with it, see app.test.ts).
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentBackend } from "@pheby/server";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { agentSpecs, serverAgentOptions, workspaceSpecs, worktreesDir } from "../src/agents.js";
import { ConfigError, loadConfig } from "../src/config.js";

const dir = () => realpathSync(mkdtempSync(join(tmpdir(), "pheby-agents-")));

/** A work directory with two workspace directories and a YAML file of `yaml`; returns the loaded config. */
function setup() {
  const cwd = dir();
  const site = join(cwd, "src", "site");
  const notes = join(cwd, "notes");
  mkdirSync(site, { recursive: true });
  mkdirSync(notes);
  const load = (yaml: unknown, env: Record<string, string> = {}) => {
    writeFileSync(join(cwd, "pheby.yaml"), typeof yaml === "string" ? yaml : stringify(yaml));
    return loadConfig({ PHEBY_CONFIG: "pheby.yaml", ...env }, cwd);
  };
  const fails = (yaml: unknown, env: Record<string, string> = {}) => {
    try {
      load(yaml, env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error("the configuration was accepted");
  };
  return { cwd, site, notes, load, fails };
}

/** The example, with its paths made real. */
const example = (site: string, notes: string) => ({
  agents: [
    {
      id: "hermes",
      name: "Hermes Agent",
      command: "/opt/hermes/bin/hermes",
      args: ["acp"],
      env: { HERMES_HOME: "/var/lib/pheby/.hermes" },
    },
    { id: "claude", name: "Claude Code", command: "claude-code-acp" },
  ],
  workspaces: [
    { id: "site", name: "Website", path: site, agents: ["claude", "hermes"] },
    { id: "notes", name: "Notes", path: notes },
  ],
});

describe("agents: and workspaces:", () => {
  it("reads the issue's example: ACP agents by default, each with its own command, env and roots; the first is the default agent", () => {
    const { cwd, site, notes, load } = setup();
    const config = load(example(site, notes));
    const worktrees = join(cwd, ".pheby-data-worktrees");
    expect(worktreesDir(config)).toBe(worktrees);
    expect(agentSpecs(config)).toEqual([
      {
        id: "hermes",
        name: "Hermes Agent",
        kind: "acp",
        argv: ["/opt/hermes/bin/hermes", "acp"],
        cwd: site,
        env: { HERMES_HOME: "/var/lib/pheby/.hermes" },
        allowedFileRoots: [site, notes, worktrees],
        mcp: { enabled: true, tools: expect.any(Array), ask_timeout_seconds: 240 },
        sharedDir: join(cwd, ".pheby-data-agent"),
      },
      expect.objectContaining({
        id: "claude",
        name: "Claude Code",
        kind: "acp",
        argv: ["claude-code-acp"],
        cwd: site,
      }),
    ]);
    expect(workspaceSpecs(config)).toEqual([
      { id: "site", name: "Website", path: site, agents: ["claude", "hermes"] },
      { id: "notes", name: "Notes", path: notes },
    ]);
  });

  it("maps them to @pheby/server's agents and workspaces options, the roots of every agent once", () => {
    const { site, notes, load } = setup();
    const config = load({
      agents: [
        { id: "sim-a", kind: "simulator" },
        { id: "sim-b", name: "Second", kind: "simulator", allowed_file_roots: ["/srv/out"] },
      ],
      workspaces: [
        { id: "site", path: site, agents: ["sim-b"] },
        { id: "notes", name: "Notes", path: notes },
      ],
    });
    const backends = new Map<string, AgentBackend>();
    const specs = agentSpecs(config);
    const options = serverAgentOptions(
      specs.map((spec) => {
        const backend = { name: spec.id } as unknown as AgentBackend;
        backends.set(spec.id, backend);
        return { spec, backend };
      }),
      workspaceSpecs(config),
    );
    expect(options).toEqual({
      agents: [
        { id: "sim-a", name: "sim-a", backend: backends.get("sim-a") },
        { id: "sim-b", name: "Second", backend: backends.get("sim-b") },
      ],
      workspaces: [
        { id: "site", name: "site", path: site, agents: ["sim-b"] },
        { id: "notes", name: "Notes", path: notes },
      ],
      allowedFileRoots: [notes, worktreesDir(config), "/srv/out", site],
    });
    // sim-a is not allowed in site: neither its root nor its working directory.
    expect(specs[0]).toMatchObject({ cwd: notes, allowedFileRoots: [notes, worktreesDir(config)] });
    expect(specs[1]).toMatchObject({
      cwd: site,
      allowedFileRoots: ["/srv/out", site, notes, worktreesDir(config)],
    });
  });

  it("keeps the single-agent settings: agent default in workspace default (its working directory), roots as before", () => {
    const cwd = dir();
    const sim = loadConfig({}, cwd);
    expect(agentSpecs(sim)).toEqual([
      expect.objectContaining({ id: "default", name: "Simulator", kind: "simulator", cwd }),
    ]);
    // The working directory holds the data directory here: it is no file root.
    expect(agentSpecs(sim)[0]!.allowedFileRoots).toEqual([join(cwd, ".pheby-data-worktrees")]);
    expect(workspaceSpecs(sim)).toEqual([{ id: "default", name: "Default", path: cwd }]);
    const work = join(cwd, "work");
    mkdirSync(work);
    const acp = loadConfig(
      {
        PHEBY_AGENT: "acp",
        PHEBY_AGENT_COMMAND: "/opt/hermes/bin/hermes acp",
        PHEBY_AGENT_CWD: "work",
        PHEBY_AGENT_ALLOWED_FILE_ROOTS: "/srv/out",
        PHEBY_WORKTREES_DIR: "/srv/worktrees",
      },
      cwd,
    );
    expect(agentSpecs(acp)).toEqual([
      expect.objectContaining({
        id: "default",
        name: "hermes",
        argv: ["/opt/hermes/bin/hermes", "acp"],
        cwd: work,
        allowedFileRoots: ["/srv/out", "/srv/worktrees"],
      }),
    ]);
    expect(workspaceSpecs(acp)).toEqual([{ id: "default", name: "Default", path: work }]);
  });

  it("lets the single agent have several workspaces, named by its id default", () => {
    const { site, notes, fails, load } = setup();
    const config = load(
      {
        workspaces: [
          { id: "site", path: site, agents: ["default"] },
          { id: "notes", path: notes },
        ],
      },
      {
        PHEBY_AGENT: "simulator",
      },
    );
    expect(agentSpecs(config)[0]).toMatchObject({ id: "default", cwd: config.agent.cwd });
    expect(agentSpecs(config)[0]!.allowedFileRoots).toEqual([site, notes, worktreesDir(config)]);
    expect(fails({ workspaces: [{ id: "site", path: site, agents: ["claude"] }] })).toContain(
      'workspaces.0.agents.0: there is no agent "claude" (the agents are "default")',
    );
  });

  it("without workspaces:, the agents share one workspace default: the first agent's working directory", () => {
    const { site, load } = setup();
    const config = load({
      agents: [
        { id: "a", kind: "simulator", cwd: site },
        { id: "b", kind: "simulator" },
      ],
    });
    expect(workspaceSpecs(config)).toEqual([{ id: "default", name: "Default", path: site }]);
    expect(agentSpecs(config).map((a) => a.cwd)).toEqual([site, site]);
  });

  it("refuses agents: together with the single-agent settings (an empty variable counts as unset)", () => {
    const { site, notes, fails, load } = setup();
    const both = fails(example(site, notes), {
      PHEBY_AGENT_COMMAND: "hermes acp",
      PHEBY_AGENT_USER: "nobody",
    });
    expect(both).toContain("agents: cannot be used with the single-agent settings");
    expect(both).toContain("PHEBY_AGENT_COMMAND (agent.command)");
    expect(both).toContain("PHEBY_AGENT_USER (agent.user)");
    // Named before the single agent's own errors (PHEBY_AGENT=acp lacks its command here).
    expect(fails(example(site, notes), { PHEBY_AGENT: "acp" })).toBe(
      "invalid configuration:\n  agents: cannot be used with the single-agent settings (PHEBY_AGENT (agent.kind)); make that agent an entry of agents:",
    );
    expect(fails({ ...example(site, notes), agent: { kind: "simulator" } })).toContain(
      "agent (in the PHEBY_CONFIG file)",
    );
    expect(load(example(site, notes), { PHEBY_AGENT: "", PHEBY_AGENT_COMMAND: "" }).agents).toHaveLength(2);
  });

  it("refuses ids that are not 1-32 of a-z 0-9 -, and empty lists", () => {
    const { site, fails, load } = setup();
    const message = fails({
      agents: [
        { id: "Hermes", command: "c" },
        { id: "a".repeat(33), command: "d" },
        { id: "a_b", command: "e" },
        { id: "", command: "f" },
      ],
      workspaces: [{ id: "my site", path: site, agents: ["Hermes"] }],
    });
    for (const key of [
      "agents.0.id",
      "agents.1.id",
      "agents.2.id",
      "agents.3.id",
      "workspaces.0.id",
      "workspaces.0.agents.0",
    ])
      expect(message).toContain(`${key}: must be 1-32 characters of a-z, 0-9 and -`);
    expect(
      load({
        agents: [
          { id: "a".repeat(32), kind: "simulator" },
          { id: "0-9", kind: "simulator" },
        ],
      }).agents,
    ).toHaveLength(2);
    expect(fails({ agents: [] })).toContain("agents: must list at least one agent");
    expect(fails({ agents: [{ id: "x", kind: "simulator" }], workspaces: [] })).toContain(
      "workspaces: must list at least one workspace",
    );
    expect(
      fails({ agents: [{ id: "x", kind: "simulator" }], workspaces: [{ id: "w", path: site, agents: [] }] }),
    ).toContain("workspaces.0.agents: must name at least one agent");
  });

  it("refuses duplicate ids and a workspace naming an agent that does not exist", () => {
    const { site, notes, fails } = setup();
    const message = fails({
      agents: [
        { id: "claude", command: "a" },
        { id: "claude", command: "b" },
      ],
      workspaces: [
        { id: "site", path: site, agents: ["claude", "codex"] },
        { id: "site", path: notes },
      ],
    });
    expect(message).toContain('agents.1.id: another agent already has the id "claude"');
    expect(message).toContain('workspaces.1.id: another workspace already has the id "site"');
    expect(message).toContain(
      'workspaces.0.agents.1: there is no agent "codex" (the agents are "claude", "claude")',
    );
  });

  it("refuses workspace paths that are missing, relative, not directories or overlap the data directory", () => {
    const { cwd, site, fails } = setup();
    writeFileSync(join(cwd, "file"), "");
    const message = fails({
      agents: [{ id: "x", kind: "simulator" }],
      workspaces: [
        { id: "a", path: join(cwd, "missing") },
        { id: "b", path: "src/site" },
        { id: "c", path: join(cwd, "file") },
        { id: "d", path: cwd }, // holds ./.pheby-data
        { id: "e", name: "ok", path: site },
      ],
    });
    expect(message).toContain(`workspaces.0.path: ${join(cwd, "missing")} does not exist`);
    expect(message).toContain("workspaces.1.path: must be an absolute path");
    expect(message).toContain(`workspaces.2.path: ${join(cwd, "file")} is not a directory`);
    expect(message).toContain("workspaces.3.path: must neither lie inside the data directory nor hold it");
    expect(message).not.toContain("workspaces.4");
    expect(fails({ agents: [{ id: "x", kind: "simulator" }], workspaces: [{ id: "f" }] })).toContain(
      "workspaces.0.path: Required",
    );
    mkdirSync(join(cwd, ".pheby-data", "inner"), { recursive: true });
    expect(
      fails({
        agents: [{ id: "x", kind: "simulator" }],
        workspaces: [{ id: "a", path: join(cwd, ".pheby-data", "inner") }],
      }),
    ).toContain("workspaces.0.path: must neither lie inside the data directory nor hold it");
  });

  it("checks each agent entry: a command for acp, known keys and kinds, names of at most 200 characters", () => {
    const { fails, load } = setup();
    const message = fails({
      agents: [
        { id: "a" },
        { id: "f", command: "x", colour: "blue" },
        { id: "g", kind: "gpt" },
        { id: "h", kind: "simulator", name: "n".repeat(201) },
      ],
    });
    expect(message).toContain("agents.0.command: is required for an acp agent");
    expect(message).toMatch(/agents\.1: Unrecognized key\(s\) in object: 'colour'/);
    expect(message).toContain("agents.2.kind: Invalid enum value");
    expect(message).toContain("agents.3.name: String must contain at most 200 character(s)");
    expect(
      load({ agents: [{ id: "h", kind: "simulator", name: "n".repeat(200) }] }).agents?.[0]?.name,
    ).toHaveLength(200);
  });

  it("checks each agent's paths: an absolute existing cwd, absolute roots and shared directory, none in the data directory", () => {
    const { cwd, site, fails } = setup();
    const message = fails({
      agents: [
        { id: "b", command: "x", cwd: "relative" },
        { id: "c", command: "x", cwd: join(cwd, "missing") },
        { id: "d", command: "x", allowed_file_roots: ["out", join(cwd, ".pheby-data")] },
        { id: "e", command: "x", shared_dir: join(cwd, ".pheby-data", "share") },
      ],
      workspaces: [{ id: "w", path: site }],
    });
    expect(message).toContain("agents.0.cwd: must be an absolute path");
    expect(message).toContain(`agents.1.cwd: ${join(cwd, "missing")} does not exist`);
    expect(message).toContain("agents.2.allowed_file_roots.0: must be an absolute path");
    expect(message).toContain(
      "agents.2.allowed_file_roots.1: must neither lie inside the data directory nor hold it",
    );
    expect(message).toContain("agents.3.shared_dir: must not lie inside the data directory");
  });

  it("takes at most 64 agents and 256 workspaces", () => {
    const { site, fails, load } = setup();
    const agents = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `a${i}`, kind: "simulator" }));
    const workspaces = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `w${i}`, path: site }));
    expect(load({ agents: agents(64), workspaces: workspaces(256) }).workspaces).toHaveLength(256);
    expect(fails({ agents: agents(65) })).toContain("agents: Array must contain at most 64 element(s)");
    expect(fails({ agents: agents(1), workspaces: workspaces(257) })).toContain(
      "workspaces: Array must contain at most 256 element(s)",
    );
  });

  it("serves the agents' users from one shared directory: they must share a primary group", () => {
    const { site, fails, load } = setup();
    const withUsers = (second: string) => ({
      agents: [
        { id: "a", command: "x", user: "nobody" },
        { id: "b", command: "y", user: second },
        { id: "c", command: "z" },
      ],
      workspaces: [{ id: "w", path: site }],
    });
    const config = load(withUsers("nobody"));
    const specs = agentSpecs(config);
    expect(specs.map((a) => a.user?.name)).toEqual(["nobody", "nobody", undefined]);
    // @pheby/server gets each ACP agent's user (git makes its worktrees as that user).
    const options = serverAgentOptions(
      specs.map((spec) => ({ spec, backend: {} as AgentBackend })),
      workspaceSpecs(config),
    );
    expect(options.agents.map((a) => a.user?.uid)).toEqual([
      specs[0]!.user!.uid,
      specs[0]!.user!.uid,
      undefined,
    ]);
    // daemon's primary group (1) is not nobody's.
    expect(fails(withUsers("daemon"))).toContain(
      "agents.1.user: daemon's primary group differs from nobody's",
    );
  });

  it("refuses an agent that no workspace allows", () => {
    const { site, fails } = setup();
    expect(
      fails({
        agents: [
          { id: "a", kind: "simulator" },
          { id: "b", kind: "simulator" },
        ],
        workspaces: [{ id: "w", path: site, agents: ["b"] }],
      }),
    ).toContain("agents.0 (a): no workspace allows this agent");
  });

  it("offers one MCP server to every agent: their mcp settings must agree", () => {
    const { fails, load } = setup();
    const agents = (second: object) => ({
      agents: [
        { id: "a", kind: "simulator", mcp: { tools: ["ask_user"] } },
        { id: "b", kind: "simulator", ...second },
      ],
    });
    expect(agentSpecs(load(agents({ mcp: { tools: ["ask_user"] } })))[1]!.mcp.tools).toEqual(["ask_user"]);
    expect(fails(agents({}))).toContain("agents.1.mcp: must be the same as agents.0.mcp (a)");
  });

  it("puts the worktrees directory beside the data directory unless told, never inside it", () => {
    const cwd = dir();
    expect(worktreesDir(loadConfig({ PHEBY_DATA_DIR: "/var/lib/pheby" }, cwd))).toBe(
      "/var/lib/pheby-worktrees",
    );
    expect(worktreesDir(loadConfig({ PHEBY_WORKTREES_DIR: "wt" }, cwd))).toBe(join(cwd, "wt"));
    for (const inside of [".pheby-data/wt", ".pheby-data", "."])
      expect(() => loadConfig({ PHEBY_WORKTREES_DIR: inside }, cwd)).toThrow(
        /PHEBY_WORKTREES_DIR \(worktrees_dir\): must neither lie inside the data directory nor hold it/,
      );
  });
});
