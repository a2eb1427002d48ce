// The shared client scenarios (packages/protocol/fixtures/client-scenarios/, format in its README):
// a scripted WebSocket server on 127.0.0.1 plays each one against this client. The Kotlin client runs
// the same files (ScenariosTest.kt), so the two clients behave alike.
import { readdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type WebSocket, WebSocketServer } from "ws";
import { PhebyClient, PhebyError } from "../src/index.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Frame = { [key: string]: Json };
type Step = { [key: string]: Json };
interface Scenario {
  description: string;
  client: { features: string[]; reconnect: false | { initial_delay_ms: number } };
  steps: Step[];
}

const dir = new URL("../../protocol/fixtures/client-scenarios/", import.meta.url);
const scenarios = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map(
    (f) => [f.replace(/\.json$/, ""), JSON.parse(readFileSync(new URL(f, dir), "utf8")) as Scenario] as const,
  );

/**
 * What a scenario's app does and sees, one function per action: the runner's only contact with the
 * client, so it can be pointed at another client API without touching the scenarios.
 */
interface ScenarioClient {
  connect(): Promise<unknown>;
  request(message: Frame): Promise<unknown>;
  /** The frames of one run, in order, once it ended. */
  chat(conversationId: string, text: string): Promise<unknown[]>;
  follow(conversationId: string): void;
  /** The conversations that got a snapshot. */
  resync(): Promise<string[]>;
  close(): void;
  /** The connection state's name (idle, connecting, open, reconnecting, failed, closed). */
  state(): string;
  onState(handler: (state: string) => void): void;
  /** Every frame the app's event stream delivers. */
  onEvent(handler: (frame: unknown) => void): void;
}

/** `@pheby/client` as an app uses it: one feature list, `chat()`, Kotlin's state names. */
function phebyClient(url: string, options: Scenario["client"]): ScenarioClient {
  const client = new PhebyClient({
    url,
    secret: "s3cret",
    features: options.features,
    reconnect: options.reconnect === false ? false : { initialDelayMs: options.reconnect.initial_delay_ms },
    pingIntervalMs: 0,
  });
  return {
    connect: () => client.connect(),
    request: (message) => client.request(message as never),
    chat: async (conversationId, text) => {
      const frames: unknown[] = [];
      for await (const frame of client.chat(conversationId, text)) frames.push(frame);
      return frames;
    },
    follow: (id) => client.follow(id),
    resync: async () => [...(await client.resync()).keys()],
    close: () => client.close(),
    state: () => client.state,
    onState: (handler) => {
      client.onState(handler);
    },
    onEvent: (handler) => {
      client.on("*", handler);
    },
  };
}

type Outcome =
  | { kind: "frame"; frame: Frame }
  | { kind: "frames"; frames: Frame[] }
  | { kind: "conversations"; ids: string[] }
  | { kind: "error"; code: string };

const STEP_TIMEOUT_MS = 5_000;

/** Resolve once `check` holds (polled), or throw after the step timeout. */
async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One connection as the scripted server sees it. */
interface Connection {
  socket: WebSocket;
  frames: Frame[];
  closed: boolean;
}

const servers: WebSocketServer[] = [];
const clients: ScenarioClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(
    servers.splice(0).map((s) => {
      for (const socket of s.clients) socket.terminate();
      return new Promise((resolve) => s.close(resolve));
    }),
  );
});

async function play(scenario: Scenario, makeClient: typeof phebyClient): Promise<void> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/ws" });
  servers.push(server);
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const connections: Connection[] = [];
  server.on("connection", (socket) => {
    const conn: Connection = { socket, frames: [], closed: false };
    connections.push(conn);
    socket.on("message", (data) => conn.frames.push(JSON.parse(String(data)) as Frame));
    socket.on("close", () => {
      conn.closed = true;
    });
  });
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;

  const client = makeClient(url, scenario.client);
  clients.push(client);
  const states = ["idle"];
  client.onState((s) => {
    if (states.at(-1) !== s) states.push(s);
  });
  const events: Frame[] = [];
  client.onEvent((e) => events.push(JSON.parse(JSON.stringify(e)) as Frame));
  let eventCursor = 0;
  const captures = new Map<string, Json>();
  const outcomes = new Map<string, Promise<Outcome>>();
  let current = -1; // the connection the server reads from: the newest one
  let read = 0; // frames of it already read

  /** Null when `actual` matches `pattern` (README "Patterns and captures"), else why not. */
  const match = (pattern: Json, actual: Json | undefined, capture: boolean): string | null => {
    if (typeof pattern === "string" && pattern.startsWith("$")) {
      if (captures.has(pattern))
        return JSON.stringify(captures.get(pattern)) === JSON.stringify(actual)
          ? null
          : `${pattern} is ${JSON.stringify(captures.get(pattern))}, got ${JSON.stringify(actual)}`;
      if (!capture) return `${pattern} was never captured`;
      if (actual === undefined || actual === null) return `nothing to capture as ${pattern}`;
      captures.set(pattern, actual);
      return null;
    }
    if (Array.isArray(pattern)) {
      if (!Array.isArray(actual) || actual.length !== pattern.length)
        return `expected ${JSON.stringify(pattern)}, got ${JSON.stringify(actual)}`;
      for (const [i, p] of pattern.entries()) {
        const why = match(p, actual[i], capture);
        if (why) return `[${i}]: ${why}`;
      }
      return null;
    }
    if (pattern !== null && typeof pattern === "object") {
      if (actual === null || typeof actual !== "object" || Array.isArray(actual))
        return `expected an object, got ${JSON.stringify(actual)}`;
      for (const [key, p] of Object.entries(pattern)) {
        const why = match(p, actual[key], capture);
        if (why) return `${key}: ${why}`;
      }
      return null;
    }
    return pattern === actual ? null : `expected ${JSON.stringify(pattern)}, got ${JSON.stringify(actual)}`;
  };
  const substitute = (value: Json): Json => {
    if (typeof value === "string" && value.startsWith("$")) {
      if (!captures.has(value)) throw new Error(`${value} was never captured`);
      return captures.get(value)!;
    }
    if (Array.isArray(value)) return value.map(substitute);
    if (value !== null && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v)]));
    return value;
  };
  const newest = async (): Promise<Connection> => {
    await until("a connection", () => connections.length > 0);
    if (current !== connections.length - 1) {
      current = connections.length - 1;
      read = 0;
    }
    return connections[current]!;
  };
  /** The client's next frame: on the newest connection, or, once that one is closed, on the next one. */
  const nextFrame = async (): Promise<Frame> => {
    let frame: Frame | undefined;
    await until("a client frame", () => {
      if (current < 0 && connections.length === 0) return false;
      if (current < 0) current = 0;
      const conn = connections[current]!;
      if (read < conn.frames.length) {
        frame = conn.frames[read++];
        return true;
      }
      if (current < connections.length - 1) {
        current++;
        read = 0;
      }
      return false;
    });
    return frame!;
  };
  const outcomeOf = (promise: Promise<unknown>, wrap: (value: unknown) => Outcome): Promise<Outcome> =>
    promise.then(wrap, (err: unknown) => {
      if (err instanceof PhebyError) return { kind: "error", code: err.code };
      throw err;
    });
  const asFrame = (value: unknown): Outcome => ({ kind: "frame", frame: JSON.parse(JSON.stringify(value)) });

  const act = (step: Step): void => {
    let outcome: Promise<Outcome> | undefined;
    switch (step.do) {
      case "connect":
        outcome = outcomeOf(client.connect(), asFrame);
        break;
      case "request":
        outcome = outcomeOf(client.request(step.message as Frame), asFrame);
        break;
      case "chat":
        outcome = outcomeOf(client.chat(step.conversation_id as string, step.text as string), (frames) => ({
          kind: "frames",
          frames: JSON.parse(JSON.stringify(frames)),
        }));
        break;
      case "resync":
        outcome = outcomeOf(client.resync(), (ids) => ({ kind: "conversations", ids: ids as string[] }));
        break;
      case "follow":
        client.follow(step.conversation_id as string);
        break;
      case "close":
        client.close();
        break;
      default:
        throw new Error(`unknown action ${String(step.do)}`);
    }
    // Kept even when unnamed, so a rejection is never unhandled.
    outcome?.catch(() => {});
    if (outcome && typeof step.as === "string") outcomes.set(step.as, outcome);
  };

  const expectStep = async (step: Step): Promise<void> => {
    switch (step.expect) {
      case "state":
        await until(`state ${String(step.state)}`, () => client.state() === step.state);
        return;
      case "states": {
        const want = step.states as string[];
        await until(`${want.length} states`, () => states.length >= want.length);
        expect(states).toEqual(want);
        return;
      }
      case "events": {
        const patterns = step.events as Frame[];
        const types = new Set(patterns.map((p) => p.type));
        let seen: number[] = [];
        await until(`${patterns.length} events`, () => {
          seen = [];
          for (let i = eventCursor; i < events.length; i++) if (types.has(events[i]!.type)) seen.push(i);
          return seen.length >= patterns.length;
        });
        for (const [i, pattern] of patterns.entries()) {
          const event = events[seen[i]!]!;
          const why = match(pattern, event, false);
          if (why) throw new Error(`event ${JSON.stringify(event)}: ${why}`);
        }
        eventCursor = seen[patterns.length - 1]! + 1;
        return;
      }
      case "result": {
        const outcome = await outcomes.get(step.of as string);
        if (!outcome) throw new Error(`no action kept as ${String(step.of)}`);
        if ("type" in step) {
          expect(outcome).toMatchObject({ kind: "frame", frame: { type: step.type } });
          if (step.frame && outcome.kind === "frame") {
            const why = match(step.frame, outcome.frame, false);
            if (why) throw new Error(`${JSON.stringify(outcome.frame)}: ${why}`);
          }
        } else if ("error" in step) {
          expect(outcome).toEqual({ kind: "error", code: step.error });
        } else if ("frames" in step) {
          if (outcome.kind !== "frames") throw new Error(`expected frames, got ${JSON.stringify(outcome)}`);
          const patterns = step.frames as Frame[];
          expect(outcome.frames.length, JSON.stringify(outcome.frames)).toBe(patterns.length);
          for (const [i, pattern] of patterns.entries()) {
            const why = match(pattern, outcome.frames[i]!, false);
            if (why) throw new Error(`${JSON.stringify(outcome.frames[i])}: ${why}`);
          }
        } else if ("conversations" in step) {
          expect(outcome).toEqual({ kind: "conversations", ids: step.conversations });
        }
        return;
      }
      case "quiet": {
        const connectionsBefore = connections.length;
        const framesBefore = connections.reduce((n, c) => n + c.frames.length, 0);
        await new Promise((resolve) => setTimeout(resolve, step.ms as number));
        expect(connections.length, "no new connection").toBe(connectionsBefore);
        expect(
          connections.reduce((n, c) => n + c.frames.length, 0),
          "no frame",
        ).toBe(framesBefore);
        return;
      }
      default:
        throw new Error(`unknown expectation ${String(step.expect)}`);
    }
  };

  for (const [index, step] of scenario.steps.entries()) {
    const kind = Object.keys(step)[0];
    const run = async () => {
      if (kind === "do") act(step);
      else if (kind === "recv") {
        const frame = await nextFrame();
        const why = match(step.recv!, frame, true);
        if (why) throw new Error(`client frame ${JSON.stringify(frame)}: ${why}`);
      } else if (kind === "send") (await newest()).socket.send(JSON.stringify(substitute(step.send!)));
      else if (kind === "close") {
        const { code, reason } = step.close as { code: number; reason?: string };
        const conn = await newest();
        conn.socket.close(code, reason);
        conn.closed = true;
      } else if (kind === "expect") await expectStep(step);
      else throw new Error(`unknown step ${kind}`);
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        run(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("step timed out")), STEP_TIMEOUT_MS + 1_000);
        }),
      ]);
    } catch (err) {
      throw new Error(`step ${index} ${JSON.stringify(step)}: ${(err as Error).message}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }
}

describe("client scenarios", () => {
  it("are there", () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(6);
  });

  for (const [name, scenario] of scenarios) {
    it(`${name}: ${scenario.description}`, () => play(scenario, phebyClient));
  }
});
