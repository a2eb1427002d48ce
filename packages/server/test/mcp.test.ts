/**
 * Pheby's MCP server as an agent sees it: the real stdio server (a child process, as the agent
 * launches it from its `mcpServers` entry) driven by the MCP SDK's own client, talking back over
 * the real Unix socket to the bridge, which runs the tools against a real scheduler and SQLite.
 * The phone's answers to `ask_user` are scripted.
 */
import { statSync } from "node:fs";
import { createConnection } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import type { ClarifyAnswer, ClarifyQuestion, McpServerSpec } from "../src/agent/port.js";
import { type AgentToolDeps, agentTools, NOT_ACTIVE } from "../src/mcp/agent-tools.js";
import { McpBridge, type McpGrant, ToolError } from "../src/mcp/bridge.js";
import { callPheby, MAX_REQUEST_BYTES } from "../src/mcp/channel.js";
import { AGENT_TOOL_NAMES, type AgentToolName } from "../src/mcp/tools.js";
import { Scheduler } from "../src/schedules/scheduler.js";

import { Store } from "../src/store/store.js";
import { MCP_COMMAND, useTempDirs } from "./helpers.js";

const CONV = "a".repeat(32);
const OTHER = "b".repeat(32);
const silent = { debug() {}, info() {}, warn() {}, error() {} };

interface Asked {
  conversationId: string;
  question: ClarifyQuestion;
  withdraw: AbortSignal;
  answer(a: ClarifyAnswer): void;
}

describe("Pheby's MCP server", () => {
  const tempDir = useTempDirs();
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });

  async function setup(
    options: {
      tools?: readonly AgentToolName[];
      conversationOf?: McpGrant["conversationOf"];
      askMs?: number;
    } = {},
  ) {
    const dataDir = tempDir();
    const store = new Store(dataDir);
    for (const id of [CONV, OTHER]) {
      store.createConversation({ id, name: id, session_id: null, source: "t", created_at: Date.now() });
    }
    const scheduler = new Scheduler({
      store: store.schedules,
      clock: { now: () => Date.now() },
      log: silent,
      defaultTimezone: "Europe/Berlin",
      conversationExists: (id) => store.getConversation(id) !== undefined,
      fire: async () => "completed",
    });
    const asked: Asked[] = [];
    const askWaiters: Array<(a: Asked) => void> = [];
    const notified: Array<{ conversationId: string; title: string; body: string }> = [];
    const deps: AgentToolDeps = {
      scheduler,
      askTimeoutMs: options.askMs ?? 60_000,
      // The phone side, as the server's decisions module behaves: withdrawn → cancelled; its
      // expiry passing → cancelled and expired.
      ask: (conversationId, question, withdraw) =>
        new Promise((resolve) => {
          const entry = { conversationId, question, withdraw, answer: resolve };
          withdraw.addEventListener("abort", () => resolve({ outcome: "cancelled" }), { once: true });
          const timer = setTimeout(
            () => resolve({ outcome: "cancelled", expired: true }),
            question.expiresInMs ?? 1e9,
          );
          timer.unref();
          asked.push(entry);
          askWaiters.shift()?.(entry);
        }),
      notify: (conversationId, title, body) => {
        notified.push({ conversationId, title, body });
      },
      sendFile: async (_conversationId, path) => {
        if (!path.startsWith("/allowed/"))
          throw new ToolError("The file is outside the allowed directories.");
        return { filename: path.split("/").pop()! };
      },
    };
    const bridge = await McpBridge.open({
      dataDir,
      tools: options.tools ?? AGENT_TOOL_NAMES,
      command: MCP_COMMAND,
      askTimeoutSeconds: 60,
      timezone: "Europe/Berlin",
      run: agentTools(deps),
      log: silent,
    });
    const grant = bridge.grant({
      agent: "test-agent",
      conversationOf: options.conversationOf ?? (async () => CONV),
    });
    const client = await connect(grant.server);
    open.push(async () => {
      await client.close();
      await bridge.close();
      scheduler.close();
      store.close();
    });
    return {
      dataDir,
      store,
      scheduler,
      bridge,
      grant,
      client,
      asked,
      notified,
      nextAsk: () =>
        new Promise<Asked>((resolve) => (asked.length ? resolve(asked.at(-1)!) : askWaiters.push(resolve))),
      call: (name: string, args: Record<string, unknown> = {}, signal?: AbortSignal) =>
        client.callTool({ name, arguments: args }, undefined, signal ? { signal } : undefined) as Promise<{
          content: Array<{ type: string; text: string }>;
          isError?: boolean;
        }>,
    };
  }

  /** Launch the MCP server exactly as an agent does from its `mcpServers` entry. */
  async function connect(entry: McpServerSpec): Promise<Client> {
    const client = new Client({ name: "test-agent", version: "1" });
    const env = Object.fromEntries(entry.env.map((e) => [e.name, e.value]));
    await client.connect(
      new StdioClientTransport({
        command: entry.command,
        args: entry.args,
        env: { PATH: process.env.PATH!, ...env },
      }),
    );
    return client;
  }

  const textOf = (result: { content: Array<{ text: string }> }) => result.content.map((c) => c.text).join("");

  it("lists its tools with real JSON Schemas for their arguments", async () => {
    const p = await setup();
    const { tools } = await p.client.listTools();
    expect(tools.map((t) => t.name)).toEqual([...AGENT_TOOL_NAMES]);
    const ask = tools.find((t) => t.name === "ask_user")!;
    expect(ask.inputSchema).toMatchObject({
      type: "object",
      properties: { question: { type: "string" }, choices: { type: "array", items: { type: "string" } } },
      required: ["question"],
    });
    expect(ask.description).toContain("within 60 seconds");
    expect(tools.find((t) => t.name === "schedule_create")!.description).toContain("default Europe/Berlin");
  });

  it("offers only the configured tools, and the bridge refuses the others even with a valid token", async () => {
    const p = await setup({ tools: ["ask_user", "notify_user"] });
    expect((await p.client.listTools()).tools.map((t) => t.name)).toEqual(["ask_user", "notify_user"]);
    const token = p.grant.server.env.find((e) => e.name === "PHEBY_MCP_TOKEN")!.value;
    expect(await callPheby(p.bridge.socketPath, { token, tool: "schedule_list", arguments: {} })).toEqual({
      ok: false,
      error: "This tool is not offered.",
    });
  });

  it("schedule_create / _list / _delete act in the caller's conversation, with the scheduler's rules", async () => {
    const p = await setup();
    const created = await p.call("schedule_create", {
      prompt: "Summarise my inbox",
      cron: "0 8 * * 1-5",
      name: "Inbox",
    });
    expect(created.isError).toBeFalsy();
    const answer = JSON.parse(textOf(created));
    // The agent's schedule waits for the user, and the agent is told so.
    expect(answer).toMatchObject({ active: false, note: NOT_ACTIVE });
    const schedule = answer.schedule;
    expect(schedule).toMatchObject({
      conversation_id: CONV,
      name: "Inbox",
      cron: "0 8 * * 1-5",
      timezone: "Europe/Berlin",
      enabled: false,
      next_run_at: null,
      created_by: "agent",
      confirmed: false,
      auto_approve: false,
    });
    expect(p.scheduler.list(CONV).map((r) => r.id)).toEqual([schedule.schedule_id]);
    const bad = await p.call("schedule_create", { prompt: "p", cron: "61 * * * *" });
    expect(bad).toMatchObject({ isError: true });
    expect(textOf(bad)).toBe("cron is not a valid expression (Invalid value for minute)");
    const neither = await p.call("schedule_create", { prompt: "p" });
    expect(textOf(neither)).toBe("A schedule needs cron (repeating) or at (once)");
    expect(JSON.parse(textOf(await p.call("schedule_list")))).toEqual([schedule]);
    // Another conversation's schedule is invisible from here.
    const theirs = p.scheduler.create({ conversationId: OTHER, prompt: "p", cron: "0 9 * * *" });
    const refused = await p.call("schedule_delete", { schedule_id: theirs.id });
    expect(textOf(refused)).toBe("No such schedule in this conversation.");
    expect(p.scheduler.list(OTHER)).toHaveLength(1);
    // The user's schedule in this conversation is not the agent's to delete.
    const users = p.scheduler.create({ conversationId: CONV, prompt: "mine", cron: "0 9 * * *" });
    const notYours = await p.call("schedule_delete", { schedule_id: users.id });
    expect(notYours).toMatchObject({ isError: true });
    expect(textOf(notYours)).toBe(
      "This schedule was made by the user: only the user can delete it, in Pheby.",
    );
    expect(p.scheduler.list(CONV).map((r) => r.id)).toEqual([schedule.schedule_id, users.id]);
    p.scheduler.delete(users.id);
    const deleted = await p.call("schedule_delete", { schedule_id: schedule.schedule_id });
    expect(JSON.parse(textOf(deleted)).deleted.schedule_id).toBe(schedule.schedule_id);
    expect(p.scheduler.list(CONV)).toEqual([]);
  });

  it("ask_user asks in the conversation and returns the answer", async () => {
    const p = await setup();
    const result = p.call("ask_user", { question: "Deploy where?", choices: ["staging", "production"] });
    const asked = await p.nextAsk();
    expect(asked.conversationId).toBe(CONV);
    expect(asked.question).toEqual({
      question: "Deploy where?",
      choices: ["staging", "production"],
      allowFreeText: true,
      expiresInMs: 60_000,
    });
    asked.answer({ outcome: "answered", response: "production" });
    expect(JSON.parse(textOf(await result))).toEqual({ answered: true, answer: "production" });
  });

  it("ask_user gives a clear no-answer when the question expires", async () => {
    const p = await setup({ askMs: 200 });
    const result = await p.call("ask_user", { question: "Anyone there?" });
    expect(JSON.parse(textOf(result))).toEqual({ answered: false, reason: "No answer within 0 seconds." });
  });

  it("ask_user's question is withdrawn when the agent cancels the tool call", async () => {
    const p = await setup();
    const controller = new AbortController();
    const result = p
      .call("ask_user", { question: "Wait for me?" }, controller.signal)
      .catch((err: Error) => err);
    const asked = await p.nextAsk();
    controller.abort();
    await expect.poll(() => asked.withdraw.aborted).toBe(true);
    expect(await result).toBeInstanceOf(Error);
  });

  it("notify_user and send_file reach the run engine's side; refusals are the agent's error text", async () => {
    const p = await setup();
    expect(
      JSON.parse(textOf(await p.call("notify_user", { title: "Done", body: "The build passed." }))),
    ).toEqual({
      sent: true,
    });
    expect(p.notified).toEqual([{ conversationId: CONV, title: "Done", body: "The build passed." }]);
    expect(JSON.parse(textOf(await p.call("send_file", { path: "/allowed/report.pdf" })))).toEqual({
      delivered: true,
      filename: "report.pdf",
    });
    const refused = await p.call("send_file", { path: "/etc/passwd" });
    expect(refused).toMatchObject({ isError: true });
    expect(textOf(refused)).toBe("The file is outside the allowed directories.");
  });

  it("says so when the call belongs to no conversation", async () => {
    const p = await setup({ conversationOf: async () => null });
    const result = await p.call("schedule_list");
    expect(result).toMatchObject({ isError: true });
    expect(textOf(result)).toMatch(/^Pheby cannot tell which conversation this call belongs to/);
  });

  it("checks the arguments again at the bridge, naming the field without its value", async () => {
    const p = await setup();
    const token = p.grant.server.env.find((e) => e.name === "PHEBY_MCP_TOKEN")!.value;
    const response = await callPheby(p.bridge.socketPath, {
      token,
      tool: "ask_user",
      arguments: { question: "", choices: "secret-value" },
    });
    expect(response).toEqual({
      ok: false,
      error:
        "Bad arguments: question: String must contain at least 1 character(s); choices: Expected array, received string",
    });
  });

  it("accepts only its own user, its tokens, and bounded requests", async () => {
    const p = await setup();
    expect(statSync(p.bridge.socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(`${p.dataDir}/mcp`).mode & 0o777).toBe(0o700);
    const token = p.grant.server.env.find((e) => e.name === "PHEBY_MCP_TOKEN")!.value;
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    // The entry carries nothing but the socket, the token and tool settings: no shared secret.
    expect(p.grant.server.env.map((e) => e.name)).toEqual([
      "PHEBY_MCP_SOCKET",
      "PHEBY_MCP_TOKEN",
      "PHEBY_MCP_TOOLS",
      "PHEBY_MCP_ASK_TIMEOUT_SECONDS",
      "PHEBY_MCP_TIMEZONE",
    ]);
    const wrong = await callPheby(p.bridge.socketPath, {
      token: "0".repeat(64),
      tool: "schedule_list",
      arguments: {},
    });
    expect(wrong).toEqual({ ok: false, error: "Not authorized." });
    // The limit is accepted (as far as size goes), one byte more is not.
    const pad = (bytes: number) => {
      const head = `{"token":"${token}","tool":"schedule_list","arguments":{},"pad":"`;
      return `${head}${"x".repeat(bytes - head.length - 2)}"}`;
    };
    expect(JSON.parse(await rawRequest(p.bridge.socketPath, pad(MAX_REQUEST_BYTES)))).toEqual({
      ok: true,
      text: "[]",
    });
    expect(JSON.parse(await rawRequest(p.bridge.socketPath, pad(MAX_REQUEST_BYTES + 1)))).toEqual({
      ok: false,
      error: "The request is too large.",
    });
    expect(JSON.parse(await rawRequest(p.bridge.socketPath, "not json"))).toEqual({
      ok: false,
      error: "The request is not JSON.",
    });
    p.grant.revoke();
    expect(await callPheby(p.bridge.socketPath, { token, tool: "schedule_list", arguments: {} })).toEqual({
      ok: false,
      error: "Not authorized.",
    });
  });

  it("an unreachable Pheby is an error the agent can read, not a crash", async () => {
    const p = await setup();
    await p.bridge.close();
    const result = await p.call("schedule_list");
    expect(result).toMatchObject({ isError: true });
    expect(textOf(result)).toMatch(/^Pheby is not reachable \(ENOENT\)/);
  });
});

/** Send one raw line on the socket and read the answer line. */
function rawRequest(socketPath: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let data = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${line}\n`));
    socket.on("data", (chunk: string) => {
      data += chunk;
    });
    socket.on("end", () => resolve(data.trim()));
    socket.on("error", reject);
  });
}
