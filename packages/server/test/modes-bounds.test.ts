/**
 * The agent's lists, bounded to what the `modes` schemas accept (LIMITS), exactly at each limit, and
 * the one table of modes that approve without asking.
 */
import { LIMITS } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { askingModeOf, autoApproves, yoloModeOf } from "../src/agent/modes.js";
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
  it("are the table's, whatever the case or separator", () => {
    for (const id of [
      "bypassPermissions",
      "acceptEdits",
      "yolo",
      "auto-edit",
      "auto_edit",
      "autoEdit",
      "full-access",
    ])
      expect(autoApproves(id), id).toBe(true);
    for (const id of ["default", "plan", "ask", "read-only", "auto"])
      expect(autoApproves(id), id).toBe(false);
  });

  it("YOLO's mode approves everything; the asking mode is the preferred one when it asks", () => {
    expect(yoloModeOf(["default", "acceptEdits", "bypassPermissions"])).toBe("bypassPermissions");
    expect(yoloModeOf(["default", "auto-edit"])).toBeUndefined();
    expect(yoloModeOf(["read-only", "auto", "full-access"])).toBe("full-access");
    expect(askingModeOf(["default", "plan", "yolo"], "plan")).toBe("plan");
    expect(askingModeOf(["default", "plan", "yolo"], "yolo")).toBe("default");
    expect(askingModeOf(["yolo"])).toBeUndefined();
  });
});
