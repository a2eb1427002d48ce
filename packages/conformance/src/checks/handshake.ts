import { PROTOCOL_VERSION } from "@pheby/protocol";
import type { Probe } from "@pheby/testkit";
import { expect } from "../failure.js";
import type { Check } from "../types.js";

const SECTION = "Handshake";

/** Wait for an error `code` on a not-yet-authenticated connection, then for the server to close it. */
async function expectRejected(probe: Probe, code: string, what: string, timeoutMs?: number): Promise<void> {
  const error = await probe.waitFor((m) => m.type === "error", `error ${code} after ${what}`, {
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
  expect(error.type === "error" && error.error.code === code, `${what}: expected error ${code}`, error);
  await probe.waitClosed(`after ${code}`);
}

export const handshakeChecks: Check[] = [
  {
    id: "handshake.ready",
    section: SECTION,
    title: "hello with the right secret gets ready (protocol_version 1, server, ts) echoing request_id",
    async run(ctx) {
      const probe = await ctx.raw();
      const ready = await probe.hello(ctx.options.secret);
      expect(ready.server.length > 0, "ready.server is empty", ready);
    },
  },
  {
    id: "handshake.unauthorized",
    section: SECTION,
    title: "a wrong secret gets error unauthorized, then the server closes",
    needs: { authFailures: true },
    async run(ctx) {
      const probe = await ctx.raw();
      probe.send({
        type: "hello",
        secret: `${ctx.options.secret}-wrong`,
        protocol_version: PROTOCOL_VERSION,
        request_id: "bad-secret",
      });
      await expectRejected(probe, "unauthorized", "a wrong secret");
    },
  },
  {
    id: "handshake.version_mismatch",
    section: SECTION,
    title: "protocol_version 2 gets error version_mismatch, then the server closes",
    needs: { authFailures: true },
    async run(ctx) {
      const probe = await ctx.raw();
      probe.send({ type: "hello", secret: ctx.options.secret, protocol_version: 2, request_id: "v2" });
      await expectRejected(probe, "version_mismatch", "protocol_version 2");
    },
  },
  {
    id: "handshake.hello_first",
    section: SECTION,
    title: "a frame other than hello first gets error unauthorized, then the server closes",
    needs: { authFailures: true },
    async run(ctx) {
      const probe = await ctx.raw();
      probe.send({ type: "conversation.list", request_id: "before-hello" });
      await expectRejected(probe, "unauthorized", "conversation.list before hello");
    },
  },
  {
    id: "handshake.auth_timeout",
    section: SECTION,
    title: "no hello within the auth timeout gets error auth_timeout, then the server closes",
    needs: { authTimeout: true, authFailures: true },
    async run(ctx) {
      const probe = await ctx.raw();
      await expectRejected(probe, "auth_timeout", "silence", ctx.options.authTimeoutMs! + ctx.timeoutMs);
    },
  },
  {
    id: "heartbeat.ping",
    section: "Heartbeat",
    title: "ping gets pong with ts, echoing request_id",
    async run(ctx) {
      const probe = await ctx.connect();
      await probe.ping();
    },
  },
  {
    id: "http.health",
    section: "Handshake (smoke check: GET /health)",
    title: 'GET /health answers {"status":"ok"} without credentials',
    async run(ctx) {
      const response = await ctx.http("/health", { auth: false });
      expect(response.status === 200, `GET /health answered ${response.status}`);
      const body = (await response.json()) as unknown;
      expect(
        typeof body === "object" && body !== null && (body as { status?: unknown }).status === "ok",
        'GET /health body is not {"status":"ok"}',
        body,
      );
    },
  },
];
