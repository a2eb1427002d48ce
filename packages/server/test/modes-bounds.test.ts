/**
 * The agent's lists, bounded to what the `modes` schemas accept (LIMITS), exactly at each limit, and
 * the one table of modes that approve without asking.
 */
import { LIMITS } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { askingModeOf, autoApproves, modeRulesOf, yoloModeOf } from "../src/agent/modes.js";
import { boundedCommands, boundedModes } from "../src/settings/modes.js";

const mode = (id: string, name = id, description: string | null = null) => ({ id, name, description });
const command = (name: string, description = "", hint: string | null = null) => ({ name, description, hint });

describe("the agent's modes and commands, bounded", () => {
  it("keeps the first 50 modes and 200 commands", () => {
    const modes = (n: number) => ({
      available: Array.from({ length: n }, (_, i) => mode(`m${i}`)),
      currentModeId: null,
    });
    expect(boundedModes(modes(LIMITS.modes))).toHaveLength(LIMITS.modes);
    expect(boundedModes(modes(LIMITS.modes + 1)).map((m) => m.id)).toEqual(
      modes(LIMITS.modes).available.map((m) => m.id),
    );
    const commands = (n: number) => Array.from({ length: n }, (_, i) => command(`c${i}`));
    expect(boundedCommands(commands(LIMITS.commands))).toHaveLength(LIMITS.commands);
    expect(boundedCommands(commands(LIMITS.commands + 1))).toHaveLength(LIMITS.commands);
  });

  it("shortens texts to their limit in code points, and drops what cannot be shortened", () => {
    const one = (m: ReturnType<typeof mode>) => boundedModes({ available: [m], currentModeId: null });
    expect(one(mode("a", "😀".repeat(LIMITS.modeNameChars)))[0]!.name).toBe(
      "😀".repeat(LIMITS.modeNameChars),
    );
    expect(one(mode("a", "😀".repeat(LIMITS.modeNameChars + 1)))[0]!.name).toBe(
      `${"😀".repeat(LIMITS.modeNameChars - 1)}…`,
    );
    const long = "d".repeat(LIMITS.modeDescriptionChars + 1);
    expect([...one(mode("a", "A", long))[0]!.description!]).toHaveLength(LIMITS.modeDescriptionChars);
    expect(one(mode("m".repeat(LIMITS.idChars)))).toHaveLength(1);
    expect(one(mode("m".repeat(LIMITS.idChars + 1)))).toHaveLength(0);
    expect(one(mode("a", "  "))[0]!.name).toBe("a");

    const c = (x: ReturnType<typeof command>) => boundedCommands([x]);
    expect(c(command("c".repeat(LIMITS.commandNameChars)))).toHaveLength(1);
    expect(c(command("c".repeat(LIMITS.commandNameChars + 1)))).toHaveLength(0);
    expect(c(command("/review"))[0]!.name).toBe("review");
    expect(c(command("  "))).toHaveLength(0);
    expect(c(command("a\nb"))).toHaveLength(0);
    expect(c(command("h", "", "x".repeat(LIMITS.commandHintChars)))[0]!.hint).toHaveLength(
      LIMITS.commandHintChars,
    );
    expect([...c(command("h", "", "x".repeat(LIMITS.commandHintChars + 1)))[0]!.hint!]).toHaveLength(
      LIMITS.commandHintChars,
    );
    expect(c(command("h", "", ""))[0]!.hint).toBeNull();
    expect([...c(command("h", "d".repeat(LIMITS.commandDescriptionChars + 1)))[0]!.description]).toHaveLength(
      LIMITS.commandDescriptionChars,
    );
  });
});

describe("modes that approve without asking", () => {
  /** Each agent's modes as docs/agents.md lists them, and the ones it approves without asking in. */
  const agents: [agent: string, modes: string[], approving: string[], yolo: string | undefined][] = [
    [
      "@zed-industries/claude-code-acp",
      ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"],
      ["acceptEdits", "bypassPermissions"],
      "bypassPermissions",
    ],
    ["qwen-code", ["plan", "default", "auto-edit", "auto", "yolo"], ["auto-edit", "auto", "yolo"], "yolo"],
    ["gemini-cli", ["default", "autoEdit", "yolo", "plan"], ["autoEdit", "yolo"], "yolo"],
    ["codex-acp", ["read-only", "auto", "full-access"], ["auto", "full-access"], "full-access"],
    ["OpenCode", ["build", "plan"], [], undefined],
    ["hermes-agent", ["default", "accept_edits", "dont_ask"], ["accept_edits", "dont_ask"], undefined],
    ["pheby-simulator", ["default", "plan", "auto-edit", "yolo"], ["auto-edit", "yolo"], "yolo"],
  ];

  it("are decided per agent, by the table", () => {
    for (const [agent, modes, approving, yolo] of agents) {
      expect(
        modes.filter((id) => autoApproves(id, agent)),
        agent,
      ).toEqual(modes.filter((id) => approving.includes(id)));
      expect(yoloModeOf(modes, agent), agent).toBe(yolo);
    }
  });

  it("the same mode ID means what its agent means by it", () => {
    // Claude Code's `dontAsk` denies what is not pre-approved; Hermes's `dont_ask` approves edits.
    expect(autoApproves("dontAsk", "@zed-industries/claude-code-acp")).toBe(false);
    expect(autoApproves("dont_ask", "hermes-agent")).toBe(true);
    // Hermes's `accept_edits` is its own, not Claude Code's `acceptEdits` by a shared name.
    expect(autoApproves("accept_edits", "hermes-agent")).toBe(true);
    expect(autoApproves("auto", "qwen-code")).toBe(true);
    expect(autoApproves("auto", "gemini-cli")).toBe(false);
  });

  it("an agent is found by its agentInfo name or title, or its command's basename, whatever the case", () => {
    for (const agent of ["qwen-code", "Qwen Code", "qwen", "QWEN_CODE"])
      expect(modeRulesOf(agent)?.yolo).toBe("yolo");
    for (const agent of ["Claude Code", "claude-code-acp"])
      expect(modeRulesOf(agent)?.yolo).toBe("bypassPermissions");
    expect(modeRulesOf("hermes")?.autoApproving).toContain("dont_ask");
    expect(modeRulesOf("codex")?.asking).toBe("read-only");
    for (const agent of ["node", "npx", "", null, undefined]) expect(modeRulesOf(agent)).toBeUndefined();
  });

  it("an unknown agent's modes approve when their names say they might", () => {
    for (const id of [
      "bypassPermissions",
      "acceptEdits",
      "accept_edits",
      "yolo",
      "auto-edit",
      "auto_edit",
      "autoEdit",
      "full-access",
      "dont_ask",
      "dontAsk",
      "auto",
    ])
      expect(autoApproves(id, "some-agent"), id).toBe(true);
    for (const id of ["default", "plan", "ask", "read-only", "build", "automatic-review"])
      expect(autoApproves(id, null), id).toBe(false);
    expect(yoloModeOf(["default", "acceptEdits", "bypassPermissions"], null)).toBe("bypassPermissions");
    expect(yoloModeOf(["default", "auto-edit"], null)).toBeUndefined();
    expect(yoloModeOf(["read-only", "auto", "full-access"], "node")).toBe("full-access");
  });

  it("the asking mode is the preferred one when it asks, else the agent's asking mode, else the first that asks", () => {
    expect(askingModeOf(["default", "plan", "yolo"], "plan", null)).toBe("plan");
    expect(askingModeOf(["default", "plan", "yolo"], "yolo", null)).toBe("default");
    expect(askingModeOf(["yolo"], null, null)).toBeUndefined();
    // Qwen Code's default `auto` approves by itself: back to `default`, not the first that asks (`plan`).
    expect(askingModeOf(["plan", "default", "auto-edit", "auto", "yolo"], "auto", "qwen-code")).toBe(
      "default",
    );
    expect(askingModeOf(["read-only", "auto", "full-access"], "auto", "codex-acp")).toBe("read-only");
    // An agent whose asking mode is not offered: the first that asks.
    expect(askingModeOf(["plan", "build"], null, "qwen-code")).toBe("plan");
  });
});
