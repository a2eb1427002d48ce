import { describe, expect, it } from "vitest";
import { placementOf, statusLabel } from "../src/workspaces.js";

describe("a conversation's placement", () => {
  it("is read from an entry's workspaces fields, and absent on a v1 entry", () => {
    expect(placementOf({ agent_id: "claude", workspace_id: "site", branch: "pheby/0123abcd" })).toEqual({
      agent_id: "claude",
      workspace_id: "site",
      branch: "pheby/0123abcd",
    });
    expect(placementOf({ agent_id: "claude", workspace_id: "site" })).toEqual({
      agent_id: "claude",
      workspace_id: "site",
      branch: null,
    });
    expect(placementOf({})).toBeUndefined();
  });
});

describe("an agent's status", () => {
  it("reads as words, and one a newer server added as unknown", () => {
    expect(["idle", "starting", "ready", "failed", "sleeping"].map(statusLabel)).toEqual([
      "not started",
      "starting…",
      "ready",
      "failed",
      "unknown",
    ]);
  });
});
