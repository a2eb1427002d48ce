import { describe, expect, it } from "vitest";
import { ServerMessage } from "../src/index.js";
import { ajvFor, fixtures } from "./helpers.js";

/** The step kinds of fixtures/client-scenarios/README.md. */
const STEP_KINDS = ["do", "recv", "send", "close", "expect"] as const;
const ACTIONS = ["connect", "request", "chat", "follow", "resync", "close"];
const EXPECTATIONS = ["state", "states", "events", "result", "quiet"];
const STATES = ["idle", "connecting", "open", "reconnecting", "failed", "closed"];

type Step = Record<string, unknown>;
type Scenario = { description: string; client: { features: string[]; reconnect: unknown }; steps: Step[] };

/**
 * A server frame as it goes on the wire: each `"$name"` replaced by a value a client could have
 * picked (captures stand for client-generated request_id and client_message_id strings).
 */
function substituted(value: unknown): unknown {
  if (typeof value === "string") return value.startsWith("$") ? `captured-${value.slice(1)}` : value;
  if (Array.isArray(value)) return value.map(substituted);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituted(v)]));
  return value;
}

/** Every `"$name"` string in a value. */
function names(value: unknown): string[] {
  if (typeof value === "string") return value.startsWith("$") ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(names);
  if (value && typeof value === "object") return Object.values(value).flatMap(names);
  return [];
}

const corpus = fixtures("client-scenarios") as [string, Scenario][];

describe("client scenarios", () => {
  const validate = ajvFor("server.schema.json");

  it("exist", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(6);
  });

  it.each(corpus)("%s: every server frame is accepted by Zod and by the JSON Schema", (_name, scenario) => {
    const frames = scenario.steps.filter((s) => "send" in s).map((s) => substituted(s.send));
    expect(frames.length).toBeGreaterThan(0);
    for (const frame of frames) {
      const zod = ServerMessage.safeParse(frame);
      expect(zod.success, `${JSON.stringify(frame)}: ${JSON.stringify(zod.error?.issues)}`).toBe(true);
      expect(validate(frame), `${JSON.stringify(frame)}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it.each(corpus)("%s: follows the format (step kinds, names captured before use)", (_name, scenario) => {
    expect(typeof scenario.description).toBe("string");
    expect(Array.isArray(scenario.client.features)).toBe(true);
    const captured = new Set<string>();
    const kept = new Set<string>();
    for (const step of scenario.steps) {
      const kind = Object.keys(step)[0] as (typeof STEP_KINDS)[number];
      expect(STEP_KINDS, JSON.stringify(step)).toContain(kind);
      if (kind === "recv") for (const name of names(step.recv)) captured.add(name);
      if (kind === "send" || kind === "expect")
        for (const name of names(step)) expect(captured, `${name} is captured before use`).toContain(name);
      if (kind === "do") {
        expect(ACTIONS).toContain(step.do);
        if (typeof step.as === "string") kept.add(step.as);
      }
      if (kind === "expect") {
        expect(EXPECTATIONS).toContain(step.expect);
        if (step.expect === "result")
          expect(kept, `${String(step.of)} is an earlier action`).toContain(step.of);
        if (step.expect === "state") expect(STATES).toContain(step.state);
        if (step.expect === "states") for (const s of step.states as string[]) expect(STATES).toContain(s);
      }
    }
  });
});
