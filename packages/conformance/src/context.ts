import type { ServerMessage } from "@pheby/protocol";
import { type InvalidFrame, Probe, runFrames } from "@pheby/testkit";
import { CheckFailure, CheckSkip, expect } from "./failure.js";
import type { ConformanceOptions } from "./types.js";

/** `ws://host:port/ws` and `http://host:port` for a ws(s):// or http(s):// server URL. */
export function serverUrls(url: string): { ws: string; http: string } {
  const u = new URL(url);
  const secure = u.protocol === "wss:" || u.protocol === "https:";
  if (!["ws:", "wss:", "http:", "https:"].includes(u.protocol))
    throw new Error(`unsupported URL scheme ${u.protocol} (use ws://, wss://, http:// or https://)`);
  const base = u.pathname.replace(/\/ws\/?$/, "").replace(/\/$/, "");
  return {
    ws: `${secure ? "wss" : "ws"}://${u.host}${base}/ws`,
    http: `${secure ? "https" : "http"}://${u.host}${base}`,
  };
}

/** A run's frames as one connection saw them. */
export interface RunTrace {
  runId: string;
  conversationId: string;
  /** Every frame of this run (`runFrames` of @pheby/testkit: by run_id, or by the message `message.start` named), in order. */
  frames: ServerMessage[];
  finished: Extract<ServerMessage, { type: "run.finished" }>;
}

/** What a check gets: connections, HTTP, and helpers for common protocol steps. */
export class CheckContext {
  readonly urls: { ws: string; http: string };
  readonly timeoutMs: number;
  /** Invalid frames received during this check. */
  readonly invalid: InvalidFrame[] = [];
  private readonly probes: Probe[] = [];
  private counter = 0;

  constructor(readonly options: ConformanceOptions) {
    this.urls = serverUrls(options.url);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Frames received so far on every connection of this check. */
  get framesReceived(): number {
    return this.probes.reduce((n, p) => n + p.frames.length + p.invalid.length, 0);
  }

  /** Skip this check with a reason. */
  skip(reason: string): never {
    throw new CheckSkip(reason);
  }

  /**
   * Await a request; when the server answers `not_implemented` (its agent cannot
   * do this, which the spec allows), skip the check instead of failing it.
   */
  async unlessNotImplemented<T>(reply: Promise<T>): Promise<T> {
    try {
      return await reply;
    } catch (err) {
      const frame = err instanceof CheckFailure ? (err.frame as ServerMessage | undefined) : undefined;
      if (frame?.type === "error" && frame.error.code === "not_implemented")
        this.skip(`the server answered not_implemented: ${frame.error.message}`);
      throw err;
    }
  }

  /** Open a connection without the handshake. */
  async raw(label = `c${++this.counter}`): Promise<Probe> {
    const probe = await Probe.open(this.urls.ws, {
      label,
      timeoutMs: this.timeoutMs,
      // The spec lets a server add fields; frames are held to the features only once `ready` came.
      strict: false,
      onInvalid: (f) => this.invalid.push(f),
      fail: (message, frame) => new CheckFailure(message, frame),
    });
    this.probes.push(probe);
    return probe;
  }

  /** Open a connection and complete the handshake with the right secret. */
  async connect(label?: string): Promise<Probe> {
    const probe = await this.raw(label);
    await probe.hello(this.options.secret);
    return probe;
  }

  /**
   * Open a connection whose hello asks for `features`, and skip the check unless `ready` enables
   * them all (v1 allows a server to ignore `hello.features`); `skipNote` adds to the skip's reason.
   */
  async connectWith(label: string, features: string[], skipNote?: string): Promise<Probe> {
    const probe = await this.raw(label);
    const ready = await probe.hello(this.options.secret, features);
    const missing = features.filter((f) => !(ready.features ?? []).includes(f));
    if (missing.length > 0)
      this.skip(`the server does not offer ${missing.join(", ")}${skipNote ? ` (${skipNote})` : ""}`);
    return probe;
  }

  /** Create a conversation and return its ID. */
  async createConversation(probe: Probe, name = "conformance"): Promise<string> {
    const created = await probe.expectReply({ type: "conversation.create", name }, "conversation.created");
    return created.conversation_id;
  }

  /**
   * Send `text` and follow the run to its `run.finished`. `onAccepted` runs as
   * soon as `run.accepted` arrives (to cancel, answer a question, ...).
   */
  async chat(
    probe: Probe,
    conversationId: string,
    text: string,
    opts: {
      onAccepted?: (runId: string) => Promise<void>;
      timeoutMs?: number;
      attachmentIds?: string[];
    } = {},
  ): Promise<RunTrace> {
    const start = probe.frames.length;
    const accepted = await probe.expectReply(
      {
        type: "chat.send",
        conversation_id: conversationId,
        text,
        ...(opts.attachmentIds ? { attachment_ids: opts.attachmentIds } : {}),
      },
      "run.accepted",
    );
    const runId = accepted.run_id;
    expect(runId, "run.accepted has an empty run_id", accepted);
    await opts.onAccepted?.(runId);
    const finished = (await probe.waitFor(
      (m) => m.type === "run.finished" && m.run_id === runId,
      `run.finished for run ${runId}`,
      { from: start, timeoutMs: opts.timeoutMs ?? Math.max(this.timeoutMs, 30_000) },
    )) as RunTrace["finished"];
    return { runId, conversationId, frames: runFrames(probe.frames.slice(start), runId), finished };
  }

  /** Fetch a path of the server's HTTP side, authenticated unless `auth: false`. */
  http(path: string, init: RequestInit & { auth?: boolean } = {}): Promise<Response> {
    const { auth = true, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (auth) headers.set("authorization", `Bearer ${this.options.secret}`);
    return fetch(`${this.urls.http}${path}`, {
      ...rest,
      headers,
      signal: rest.signal ?? AbortSignal.timeout(Math.max(this.timeoutMs, 30_000)),
    });
  }

  /** Close every connection this check opened. */
  dispose(): void {
    for (const probe of this.probes) probe.close();
  }
}

/** Fail unless the run finished with `status`. */
export function expectFinished(trace: RunTrace, status: "completed" | "cancelled" | "failed"): void {
  if (trace.finished.status !== status)
    throw new CheckFailure(
      `run ${trace.runId} finished ${trace.finished.status}, expected ${status}`,
      trace.finished,
    );
}
