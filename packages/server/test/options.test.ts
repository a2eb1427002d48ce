import { describe, expect, it } from "vitest";
import {
  AGENT_TOOL_NAMES,
  DEFAULT_DELTA_INTERVAL_MS,
  DEFAULT_LOCKOUT,
  DEFAULT_REPLAY_LIMITS,
  optionRules,
  resolveServerOptions,
} from "../src/index.js";
import { systemClock } from "../src/util/time.js";

describe("the server options schema", () => {
  it("fills in every default, and passes the objects it is handed through as they are", () => {
    const clock = { now: () => 42 };
    const o = resolveServerOptions({ secret: "s", dataDir: "/tmp/x", clock });
    expect(o).toMatchObject({
      deltaIntervalMs: DEFAULT_DELTA_INTERVAL_MS,
      lockout: DEFAULT_LOCKOUT,
      replayLog: DEFAULT_REPLAY_LIMITS,
      trustedProxy: "loopback",
      corsOrigins: [],
      resume: true,
      agentTools: { enabled: true, tools: AGENT_TOOL_NAMES },
    });
    expect(o.clock).toBe(clock);
    expect(resolveServerOptions({ secret: "s", dataDir: "/tmp/x" }).clock).toBe(systemClock);
    expect(
      resolveServerOptions({ secret: "s", dataDir: "/tmp/x", lockout: { maxFailures: 2 } }).lockout,
    ).toEqual({ ...DEFAULT_LOCKOUT, maxFailures: 2 });
  });

  it("names every bad option in one error", () => {
    expect(() =>
      resolveServerOptions({
        secret: "",
        dataDir: "/tmp/x",
        publicUrl: "https://h/ws",
        corsOrigins: ["https://a.example/console"],
        schedules: { timezone: "Mars/Olympus" },
        replayLog: { maxEvents: 0 },
      }),
    ).toThrow(
      /^createPhebyServer: secret must be a non-empty string; publicUrl must be the WebSocket URL .*; corsOrigins\.0 each entry must be an origin .*; replayLog\.maxEvents must be a whole number >= 1; schedules\.timezone must be an IANA time zone such as Europe\/Berlin or UTC$/,
    );
  });

  it("exports the rules of single values for a configuration layer", () => {
    expect(optionRules.trustedProxy.safeParse(["10.0.0.1", "::1"]).success).toBe(true);
    expect(optionRules.trustedProxy.safeParse(["caddy.local"]).success).toBe(false);
    expect(optionRules.agentToolName.safeParse("rm_rf").success).toBe(false);
    expect(optionRules.pushSubject.safeParse("mailto:a@example.com").success).toBe(true);
  });
});
