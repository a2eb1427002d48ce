// The suite against our real server (apps/server as a child process), and
// proof that it can fail: a proxy that drops message.start must be caught.
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { formatReport, runConformance } from "../src/index.js";
import { serverUnavailable, startServer, type TestServer } from "./server.js";

const unavailable = serverUnavailable();

type Rewrite = (frame: string) => string | undefined;

/**
 * A WebSocket proxy in front of `upstream` that rewrites server frames (undefined drops one), with
 * `rewrite`, or with a rewrite of its own per connection (`perConnection`) for a stateful one.
 */
async function brokenProxy(upstream: string, rewrite: Rewrite, perConnection?: () => Rewrite) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/ws" });
  await new Promise((r) => server.once("listening", r));
  server.on("connection", (client) => {
    const connectionRewrite = perConnection?.() ?? rewrite;
    const pending: string[] = [];
    const up = new WebSocket(upstream);
    up.on("open", () => {
      for (const frame of pending.splice(0)) up.send(frame);
    });
    up.on("message", (data) => {
      const text = connectionRewrite(String(data));
      if (text !== undefined) client.send(text);
    });
    up.on("close", () => client.close());
    client.on("message", (data) =>
      up.readyState === WebSocket.OPEN ? up.send(String(data)) : pending.push(String(data)),
    );
    client.on("close", () => up.close());
  });
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe.skipIf(unavailable !== undefined)(
  `conformance against apps/server${unavailable ? ` (${unavailable})` : ""}`,
  () => {
    let server: TestServer;

    beforeAll(async () => {
      // The push check's receiver listens on loopback, which a server refuses by default (SSRF rule).
      server = await startServer({ PHEBY_PUSH_ALLOW_PRIVATE: "true" });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("passes every check (frames validated against @pheby/protocol)", async () => {
      const report = await runConformance({ url: server.url, secret: server.secret });
      console.log(formatReport(report));
      expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
      // Our server implements every area; only the opt-in auth-timeout check (run separately below) may skip.
      expect(report.results.filter((r) => r.status === "skip").map((r) => r.id)).toEqual([
        "handshake.auth_timeout",
      ]);
      expect(report.summary.passed).toBeGreaterThanOrEqual(28);
      expect(report.frames.received).toBeGreaterThan(100);
      expect(report.frames.invalid).toBe(0);
    });

    it("fails runs.lifecycle when a proxy drops message.start, quoting the offending frame", async () => {
      const proxy = await brokenProxy(server.url, (f) =>
        (JSON.parse(f) as { type: string }).type === "message.start" ? undefined : f,
      );
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["runs.lifecycle", "heartbeat.ping"],
        });
        const lifecycle = report.results.find((r) => r.id === "runs.lifecycle")!;
        expect(lifecycle.status).toBe("fail");
        expect(lifecycle.reason).toContain("message.start");
        expect(lifecycle.frame).toMatchObject({ type: "run.finished" });
        expect(report.results.find((r) => r.id === "heartbeat.ping")!.status).toBe("pass");
        expect(report.ok).toBe(false);
      } finally {
        await proxy.close();
      }
    });

    it("fails extensions.delta_append when a proxy garbles an append delta, quoting it", async () => {
      // Drops the first character of every append delta after the first: the stitched draft diverges.
      const proxy = await brokenProxy(server.url, (f) => {
        const m = JSON.parse(f) as { type: string; offset?: number; text: string };
        if (m.type !== "message.delta" || !m.offset) return f;
        return JSON.stringify({ ...m, text: m.text.slice(1) });
      });
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["extensions.delta_append"],
        });
        const [check] = report.results;
        expect(check).toMatchObject({ status: "fail", frame: { type: "message.delta" } });
        expect(check!.reason).toContain("stitched draft");
      } finally {
        await proxy.close();
      }
    });

    it("fails extensions.schedules when a client's schedule comes back unconfirmed, as if the agent made it", async () => {
      const proxy = await brokenProxy(server.url, (f) => {
        const m = JSON.parse(f) as { type: string; schedule?: Record<string, unknown> };
        return m.type === "schedule.created"
          ? JSON.stringify({ ...m, schedule: { ...m.schedule, created_by: "agent", confirmed: false } })
          : f;
      });
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["extensions.schedules"],
        });
        const [check] = report.results;
        expect(check).toMatchObject({ status: "fail" });
        expect(check!.reason).toContain("not created_by user, confirmed");
      } finally {
        await proxy.close();
      }
    });

    it("fails extensions.schedules when a proxy stamps the requester's request_id on every copy, quoting it", async () => {
      // The other connections' schedule.changed must carry no request_id.
      let last = "";
      const proxy = await brokenProxy(server.url, (f) => {
        const m = JSON.parse(f) as { type: string; request_id?: string };
        if (m.request_id) last = m.request_id;
        return m.type === "schedule.changed" && !m.request_id
          ? JSON.stringify({ ...m, request_id: last })
          : f;
      });
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["extensions.schedules"],
        });
        const [check] = report.results;
        expect(check).toMatchObject({ status: "fail", frame: { type: "schedule.changed" } });
        expect(check!.reason).toContain("not the creation's broadcast");
      } finally {
        await proxy.close();
      }
    });

    it("fails extensions.resume when a proxy drops a replayed frame, quoting what is missing", async () => {
      // On each connection, the first tool.event after conversation.resumed is lost.
      const proxy = await brokenProxy(
        server.url,
        (f) => f,
        () => {
          let resumed = false;
          let dropped = false;
          return (f) => {
            const type = (JSON.parse(f) as { type: string }).type;
            if (type === "conversation.resumed") resumed = true;
            if (resumed && !dropped && type === "tool.event") {
              dropped = true;
              return undefined;
            }
            return f;
          };
        },
      );
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["extensions.resume"],
        });
        const [check] = report.results;
        expect(check).toMatchObject({ status: "fail", frame: { type: "tool.event" } });
        expect(check!.reason).toContain("misses a tool.event");
      } finally {
        await proxy.close();
      }
    });

    it("fails extensions.changes when a proxy miscounts a changed file, quoting the snapshot", async () => {
      // The snapshot's src/app.ts loses its deletion: a valid frame, a wrong answer.
      const proxy = await brokenProxy(server.url, (f) =>
        f.includes('"changes.snapshot"')
          ? f.replace(
              /("path":"src\/app\.ts","status":"modified","type":"file","additions":2,"deletions":)1/,
              "$10",
            )
          : f,
      );
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["extensions.changes"],
        });
        const [check] = report.results;
        expect(check).toMatchObject({ status: "fail", frame: { type: "changes.snapshot" } });
        expect(check!.reason).toContain("src/app.ts as modified +2 −1");
      } finally {
        await proxy.close();
      }
    });

    it("fails a check when a connection that did not enable resume gets seq, even on a valid frame", async () => {
      // Adds seq to every frame with a conversation_id: valid for the schema, not for a v1 connection.
      const proxy = await brokenProxy(server.url, (f) =>
        f.includes('"conversation_id"') && !f.includes('"seq"') ? `${f.slice(0, -1)},"seq":1}` : f,
      );
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["runs.lifecycle"],
        });
        const [check] = report.results;
        expect(check).toMatchObject({ status: "fail" });
        expect(check!.reason).toContain("resume");
        expect(report.frames.invalid).toBeGreaterThan(0);
      } finally {
        await proxy.close();
      }
    });

    it("fails a check that receives a frame @pheby/protocol rejects, quoting it", async () => {
      // pong's ts must be an ISO-8601 timestamp; this proxy breaks it on the way through.
      const proxy = await brokenProxy(server.url, (f) =>
        f.replace(/^\{"type":"pong"(.*)"ts":"[^"]*"/, '{"type":"pong"$1"ts":"yesterday"'),
      );
      try {
        const report = await runConformance({
          url: proxy.url,
          secret: server.secret,
          only: ["heartbeat.ping"],
          timeoutMs: 1_000,
        });
        const [ping] = report.results;
        expect(ping).toMatchObject({ status: "fail" });
        expect(ping!.reason).toContain("@pheby/protocol rejects");
        expect(String(ping!.frame)).toContain('"ts":"yesterday"');
        expect(report.frames.invalid).toBe(1);
      } finally {
        await proxy.close();
      }
    });
  },
);

// The auth-timeout check needs a server with a short timeout: the library, started in-process.
type ServerLib = {
  createPhebyServer?: (o: { secret: string; dataDir: string; authTimeoutMs?: number; agent?: unknown }) => {
    listen(o: { port: number; host: string }): Promise<{ port: number }>;
    close(): Promise<void>;
  };
  createSimulatorBackend?: () => object;
};
const lib = (await import("@pheby/server").catch(() => ({}))) as ServerLib;

describe.skipIf(!lib.createPhebyServer)(
  "conformance auth timeout (@pheby/server with authTimeoutMs 300)",
  () => {
    it("passes handshake.auth_timeout", async () => {
      const { mkdtempSync, rmSync } = await import("node:fs");
      const { tmpdir } = await import("node:os");
      const { join } = await import("node:path");
      const dataDir = mkdtempSync(join(tmpdir(), "pheby-auth-timeout-"));
      const server = lib.createPhebyServer!({
        secret: "auth-timeout-secret-0123456789",
        dataDir,
        authTimeoutMs: 300,
      });
      try {
        const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
        const report = await runConformance({
          url: `ws://127.0.0.1:${port}/ws`,
          secret: "auth-timeout-secret-0123456789",
          authTimeoutMs: 300,
          only: ["handshake.auth_timeout"],
        });
        expect(report.results.map((r) => [r.id, r.status, r.reason])).toEqual([
          ["handshake.auth_timeout", "pass", undefined],
        ]);
      } finally {
        await server.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  },
);

describe.skipIf(lib.createPhebyServer === undefined)(
  "conformance push check (@pheby/server with its default SSRF rule)",
  () => {
    it("skips extensions.push, saying why, when the server refuses the local receiver", async () => {
      const { mkdtempSync, rmSync } = await import("node:fs");
      const { tmpdir } = await import("node:os");
      const { join } = await import("node:path");
      const dataDir = mkdtempSync(join(tmpdir(), "pheby-push-ssrf-"));
      const server = lib.createPhebyServer!({ secret: "push-ssrf-secret-0123456789", dataDir });
      try {
        const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
        const report = await runConformance({
          url: `ws://127.0.0.1:${port}/ws`,
          secret: "push-ssrf-secret-0123456789",
          only: ["extensions.push"],
        });
        expect(report.results).toMatchObject([{ id: "extensions.push", status: "skip" }]);
        expect(report.results[0]!.reason).toContain("PHEBY_PUSH_ALLOW_PRIVATE=true");
        expect(report.frames.invalid).toBe(0);
      } finally {
        await server.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  },
);

describe.skipIf(lib.createPhebyServer === undefined)(
  "conformance changes check (@pheby/server whose agent works outside any git repository)",
  () => {
    it("passes extensions.changes: not_implemented is the expected answer there", async () => {
      const { mkdtempSync, rmSync } = await import("node:fs");
      const { tmpdir } = await import("node:os");
      const { join } = await import("node:path");
      const dataDir = mkdtempSync(join(tmpdir(), "pheby-changes-nogit-"));
      const workdir = mkdtempSync(join(tmpdir(), "pheby-changes-workdir-"));
      // An agent (the simulator here) whose working directory is a plain directory, as an ACP agent's cwd.
      const agent = { ...lib.createSimulatorBackend!(), workdir: () => workdir };
      const server = lib.createPhebyServer!({ secret: "changes-nogit-secret-0123456789", dataDir, agent });
      try {
        const { port } = await server.listen({ port: 0, host: "127.0.0.1" });
        const report = await runConformance({
          url: `ws://127.0.0.1:${port}/ws`,
          secret: "changes-nogit-secret-0123456789",
          simulator: false,
          only: ["extensions.changes"],
        });
        expect(report.results.map((r) => [r.id, r.status, r.reason])).toEqual([
          ["extensions.changes", "pass", undefined],
        ]);
        expect(report.frames.invalid).toBe(0);
      } finally {
        await server.close();
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(workdir, { recursive: true, force: true });
      }
    });
  },
);
