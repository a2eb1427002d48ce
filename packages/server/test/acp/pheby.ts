/**
 * An ACP backend behind a real Pheby server (127.0.0.1, port 0), driven through `@pheby/client`.
 * Used by the fake-agent server tests and the real-agent suites. Every frame is validated
 * against `@pheby/protocol` by the helpers' client.
 */
import type { PhebyClient } from "@pheby/client";
import { DEFAULT_FEATURES } from "@pheby/client";
import type { ServerMessage, ServerMessageOf, ServerMessageType } from "@pheby/protocol";
import { answerOf, runFrames } from "@pheby/testkit";
import type { Logger } from "pino";
import { type AcpBackendOptions, createAcpBackend } from "../../src/agent/acp/index.js";
import type { PhebyServerOptions } from "../../src/index.js";
import { phebyClient, startServer, type TestServer, type TestTransport } from "../helpers.js";

/** A Pheby server with the ACP backend and one connected client that records every frame. */
export interface PhebyAcp {
  ts: TestServer;
  /** The server's ACP backend (e.g. to bring a slow-starting agent up before the first request). */
  backend: ReturnType<typeof createAcpBackend>;
  client: PhebyClient;
  /** Every frame the client received, in order. */
  frames: ServerMessage[];
  /** The first recorded or future frame of `type` matching `pred`. */
  waitFor<T extends ServerMessageType>(
    type: T,
    pred?: (m: ServerMessageOf<T>) => boolean,
    timeoutMs?: number,
  ): Promise<ServerMessageOf<T>>;
  /** Create a conversation; returns its ID. */
  create(name?: string): Promise<string>;
  /** Send a chat message and wait for the run to finish. */
  chat(
    conversationId: string,
    text: string,
    timeoutMs?: number,
    attachmentIds?: string[],
  ): Promise<RunOutcome>;
  /** Close the client and the server, and remove the data dir. */
  close(): Promise<void>;
}

/** The frames of one finished run. */
export interface RunOutcome {
  runId: string;
  frames: ServerMessage[];
  finished: ServerMessageOf<"run.finished">;
  /** Text of every `message.delta`, in order. */
  deltas: string[];
  /** The final `message.complete` of the draft. */
  complete: ServerMessageOf<"message.complete">;
}

/**
 * Start a server whose agent is `createAcpBackend(agent)`, and connect a client: over ws on a real
 * port unless `transport: "memory"` (then no port, and no HTTP for attachments).
 */
export async function startPhebyAcp(
  agent: AcpBackendOptions,
  server: {
    dataDir?: string;
    logger?: Logger;
    allowedFileRoots?: string[];
    cancelGraceMs?: number;
    transport?: TestTransport;
    /** Options of the server's scheduler and agent tools. */
    schedules?: PhebyServerOptions["schedules"];
    agentTools?: PhebyServerOptions["agentTools"];
    push?: PhebyServerOptions["push"];
    logChatContent?: boolean;
    agentShare?: PhebyServerOptions["agentShare"];
    /** Extensions the client asks for (besides delta.append). */
    features?: string[];
  } = {},
): Promise<PhebyAcp> {
  const backend = createAcpBackend(agent);
  const { features, ...serverOptions } = server;
  const ts = await startServer({ agent: backend, ...serverOptions });
  const client = await phebyClient(ts, features ? { features: [...DEFAULT_FEATURES, ...features] } : {});
  return { ...recording(ts, client), backend };
}

/** A Pheby server of several agents (the `workspaces` extension) and one connected, recording client. */
export type PhebyAgents = Omit<PhebyAcp, "backend">;

/**
 * Start a server of several agents in `workspaces` (its `agents`/`workspaces` options, each agent an
 * ACP backend of its options), and connect a client asking for the default extensions and `features`.
 */
export async function startPhebyAgents(
  agents: ReadonlyArray<{ id: string; name: string; options: AcpBackendOptions }>,
  workspaces: NonNullable<PhebyServerOptions["workspaces"]>,
  server: { dataDir?: string; logger?: Logger; features?: string[] } = {},
): Promise<PhebyAgents> {
  const { features = [], ...serverOptions } = server;
  const ts = await startServer({
    agents: agents.map((a) => ({ id: a.id, name: a.name, backend: createAcpBackend(a.options) })),
    workspaces,
    ...serverOptions,
  });
  const client = await phebyClient(ts, { features: [...DEFAULT_FEATURES, ...features] });
  return recording(ts, client);
}

/** Record every frame `client` receives, with the helpers built on that record. */
function recording(ts: TestServer, client: PhebyClient): PhebyAgents {
  const frames: ServerMessage[] = [];
  const waiters = new Set<(m: ServerMessage) => void>();
  client.on("*", (m) => {
    frames.push(m);
    for (const w of [...waiters]) w(m);
  });

  const waitFor: PhebyAcp["waitFor"] = (type, pred = () => true, timeoutMs = 30_000) => {
    type M = ServerMessageOf<typeof type>;
    const match = (m: ServerMessage): m is M => m.type === type && pred(m as M);
    const seen = frames.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter = (m: ServerMessage) => {
        if (!match(m)) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        resolve(m);
      };
      waiters.add(waiter);
    });
  };

  return {
    ts,
    client,
    frames,
    waitFor,
    async create(name) {
      const created = await client.request({ type: "conversation.create", ...(name ? { name } : {}) });
      return created.conversation_id;
    },
    async chat(conversationId, text, timeoutMs, attachmentIds) {
      const { run_id: runId } = await client.request({
        type: "chat.send",
        conversation_id: conversationId,
        text,
        ...(attachmentIds ? { attachment_ids: attachmentIds } : {}),
      });
      const finished = await waitFor("run.finished", (m) => m.run_id === runId, timeoutMs);
      const mine = runFrames(frames, runId, { accepted: false });
      const complete = answerOf(mine, runId);
      if (!complete) throw new Error(`run ${runId} finished without message.complete`);
      const deltas = mine.flatMap((m) => (m.type === "message.delta" ? [m.text] : []));
      return { runId, frames: mine, finished, deltas, complete };
    },
    async close() {
      client.close();
      await ts.cleanup();
    },
  };
}

/** Frames of `type` among `frames`. */
export function framesOf<T extends ServerMessageType>(
  frames: readonly ServerMessage[],
  type: T,
): ServerMessageOf<T>[] {
  return frames.filter((m): m is ServerMessageOf<T> => m.type === type);
}
