import { describe, expect, it } from "vitest";
import {
  ALTERNATIVE_REPLY_TYPES,
  CLIENT_MESSAGE_TYPES,
  decodeClientFrame,
  decodeServerFrame,
  FEATURES,
  isReplyType,
  LIMITS,
  NO_REPLY_TYPES,
  PUSH_EVENT_KINDS,
  PushPayload,
  REPLY_TYPES,
  SERVER_MESSAGE_TYPES,
} from "../src/index.js";

// Exact boundaries of the extensions' limits: the limit is accepted, limit + 1 is rejected.

const conv = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
const ts = "2026-09-02T18:00:00+00:00";
const all = { features: FEATURES };
const client = (frame: Record<string, unknown>) => {
  const r = decodeClientFrame(JSON.stringify(frame), all);
  return r.ok ? "ok" : r.error.code;
};
const server = (frame: Record<string, unknown>) => {
  const r = decodeServerFrame(JSON.stringify(frame));
  return r.ok ? "ok" : r.error.code;
};
const boundary = (make: (n: number) => Record<string, unknown>, limit: number, check = client) => [
  check(make(limit)),
  check(make(limit + 1)),
];
const p256dh = `B${"A".repeat(86)}`;
const auth = "A".repeat(22);
const subscribe = (extra: Record<string, unknown>) => ({
  type: "push.subscribe",
  endpoint: "https://push.example.net/up1",
  keys: { p256dh, auth },
  ...extra,
});

describe("extension limits", () => {
  it("are the documented numbers", () => {
    expect(LIMITS).toMatchObject({
      clientMessageIdChars: 64,
      queuedRunsPerConversation: 20,
      schedules: 100,
      pushSubscriptions: 50,
      pushPayloadBytes: 3_993,
      pushTopicChars: 32,
      pairingCodeSeconds: 600,
      clientMessageIdWindowSeconds: 86_400,
      clientMessageIdsPerPrincipal: 10_000,
      modes: 50,
      modeNameChars: 200,
      modeDescriptionChars: 1_000,
      commands: 200,
      commandNameChars: 200,
      commandDescriptionChars: 1_000,
      commandHintChars: 200,
      inboxPreviewChars: 200,
      searchQueryChars: 200,
      searchResults: 50,
      searchResultsDefault: 20,
      searchSnippetChars: 200,
      workspaceIdChars: 32,
      workspaceNameChars: 200,
      agents: 64,
      workspaces: 256,
      changesFiles: 1_000,
      changesPatchBytes: 262_144,
      changesFileIdChars: 64,
    });
    expect(PUSH_EVENT_KINDS).toEqual(["approval", "clarify", "run_finished", "message"]);
  });

  it("client_message_id: 64 characters (code points) on chat.send and conversation.create, not 65", () => {
    const send = (n: number) => ({
      type: "chat.send",
      conversation_id: conv,
      text: "hi",
      client_message_id: "x".repeat(n),
    });
    const create = (n: number) => ({ type: "conversation.create", client_message_id: "😀".repeat(n) });
    expect(boundary(send, 64)).toEqual(["ok", "bad_request"]);
    expect(boundary(create, 64)).toEqual(["ok", "bad_request"]);
    expect(client(send(0))).toBe("bad_request");
  });

  it("since_seq: 0 up to the largest safe integer", () => {
    const open = (since_seq: number) => ({ type: "conversation.open", conversation_id: conv, since_seq });
    expect([client(open(0)), client(open(-1))]).toEqual(["ok", "bad_request"]);
    expect(boundary(open, Number.MAX_SAFE_INTEGER)).toEqual(["ok", "bad_request"]);
  });

  it("queue: position 1..20 and at most 20 queued runs", () => {
    const queued = (position: number) => ({
      type: "run.queued",
      conversation_id: conv,
      run_id: "r",
      position,
    });
    expect(boundary(queued, LIMITS.queuedRunsPerConversation, server)).toEqual(["ok", "bad_request"]);
    expect(server(queued(0))).toBe("bad_request");
    const changed = (n: number) => ({
      type: "queue.changed",
      conversation_id: conv,
      queued: Array.from({ length: n }, (_, i) => ({
        run_id: `r${i}`,
        text: "t",
        position: Math.min(i + 1, 20),
      })),
    });
    expect(boundary(changed, 20, server)).toEqual(["ok", "bad_request"]);
  });

  it("schedules: at most 100 listed; names of 200 characters, cron of 100, time zones of 64", () => {
    const schedule = (i: number) => ({
      schedule_id: `s${i}`,
      conversation_id: conv,
      name: null,
      prompt: "p",
      cron: "* * * * *",
      at: null,
      timezone: "UTC",
      enabled: true,
      next_run_at: ts,
      last_run_at: null,
      last_status: null,
      created_by: "user",
      confirmed: true,
      auto_approve: false,
    });
    const snapshot = (n: number) => ({
      type: "schedule.snapshot",
      schedules: Array.from({ length: n }, (_, i) => schedule(i)),
    });
    expect(boundary(snapshot, LIMITS.schedules, server)).toEqual(["ok", "bad_request"]);
    const create = (extra: Record<string, unknown>) => ({
      type: "schedule.create",
      conversation_id: conv,
      prompt: "p",
      cron: "0 8 * * *",
      ...extra,
    });
    expect(boundary((n) => create({ name: "n".repeat(n) }), 200)).toEqual(["ok", "bad_request"]);
    expect(boundary((n) => create({ cron: `0 8 * * ${"1".repeat(n - 8)}` }), 100)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => create({ timezone: "Z".repeat(n) }), 64)).toEqual(["ok", "bad_request"]);
    expect(boundary((n) => create({ prompt: "x".repeat(n) }), LIMITS.chatTextChars)).toEqual([
      "ok",
      "too_large",
    ]);
  });

  it("schedules: exactly one of cron and at to create; an update changes something, not both triggers", () => {
    const create = (extra: Record<string, unknown>) =>
      decodeClientFrame(
        JSON.stringify({ type: "schedule.create", conversation_id: conv, prompt: "p", ...extra }),
        all,
      );
    expect(create({ cron: "0 8 * * *" }).ok).toBe(true);
    expect(create({ at: "2026-09-03T09:30:00+02:00" }).ok).toBe(true);
    expect(create({})).toMatchObject({ error: { code: "bad_request", message: "cron or at is required" } });
    expect(create({ cron: "0 8 * * *", at: "2026-09-03T09:30:00+02:00" })).toMatchObject({
      error: { message: "at must not be sent with cron" },
    });
    const update = (extra: Record<string, unknown>) =>
      decodeClientFrame(JSON.stringify({ type: "schedule.update", schedule_id: "s", ...extra }), all);
    expect(update({})).toMatchObject({
      error: {
        message: "frame needs at least one of: name, prompt, cron, at, timezone, enabled, auto_approve",
      },
    });
    expect(update({ name: null }).ok).toBe(true);
    expect(update({ enabled: false }).ok).toBe(true);
    // auto_approve alone is a change (whether the sender may make it is the server's to say).
    expect(update({ auto_approve: true }).ok).toBe(true);
    expect(create({ cron: "0 8 * * *", auto_approve: true }).ok).toBe(true);
  });

  it("push: endpoints of 2048 characters, distinct events, keys of the RFC sizes", () => {
    const endpoint = (n: number) => subscribe({ endpoint: `https://push.example.net/${"u".repeat(n - 25)}` });
    expect(boundary(endpoint, LIMITS.pushEndpointChars)).toEqual(["ok", "bad_request"]);
    expect(client(subscribe({ events: [...PUSH_EVENT_KINDS] }))).toBe("ok");
    expect(client(subscribe({ events: ["approval", "resolved"] }))).toBe("bad_request");
    expect(client(subscribe({ keys: { p256dh: `${p256dh}=`, auth: `${auth}==` } }))).toBe("ok");
    expect(client(subscribe({ keys: { p256dh: `${p256dh}A`, auth } }))).toBe("bad_request");
    expect(client(subscribe({ keys: { p256dh, auth: `${auth}A` } }))).toBe("bad_request");
    expect(boundary((n) => subscribe({ device_name: "d".repeat(n) }), LIMITS.deviceNameChars)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(
      boundary(
        (n) => ({ type: "push.subscriptions", subscriptions: Array(n).fill(subscription) }),
        50,
        server,
      ),
    ).toEqual(["ok", "bad_request"]);
  });

  it("modes: 50 modes and 200 commands; names, descriptions and hints bounded in code points", () => {
    const mode = (extra: Record<string, unknown> = {}) => ({
      mode_id: "plan",
      name: "Plan",
      description: null,
      auto_approves: false,
      ...extra,
    });
    const modes = (list: unknown[]) => ({
      type: "modes.snapshot",
      conversation_id: conv,
      modes: list,
      current_mode_id: null,
    });
    const command = (extra: Record<string, unknown> = {}) => ({
      name: "compact",
      description: "",
      hint: null,
      ...extra,
    });
    const commands = (list: unknown[]) => ({
      type: "commands.snapshot",
      conversation_id: conv,
      commands: list,
    });
    expect(boundary((n) => modes(Array(n).fill(mode())), LIMITS.modes, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => modes([mode({ name: "😀".repeat(n) })]), LIMITS.modeNameChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(
      boundary((n) => modes([mode({ description: "d".repeat(n) })]), LIMITS.modeDescriptionChars, server),
    ).toEqual(["ok", "bad_request"]);
    expect(boundary((n) => modes([mode({ mode_id: "m".repeat(n) })]), LIMITS.idChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => commands(Array(n).fill(command())), LIMITS.commands, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(
      boundary((n) => commands([command({ name: "c".repeat(n) })]), LIMITS.commandNameChars, server),
    ).toEqual(["ok", "bad_request"]);
    expect(
      boundary(
        (n) => commands([command({ description: "d".repeat(n) })]),
        LIMITS.commandDescriptionChars,
        server,
      ),
    ).toEqual(["ok", "bad_request"]);
    expect(
      boundary((n) => commands([command({ hint: "h".repeat(n) })]), LIMITS.commandHintChars, server),
    ).toEqual(["ok", "bad_request"]);
    const set = (n: number) => ({ type: "mode.set", conversation_id: conv, mode_id: "m".repeat(n) });
    expect(boundary(set, LIMITS.idChars)).toEqual(["ok", "bad_request"]);
  });

  it("inbox: queries of 200 characters, 1..50 results, previews and snippets of 200", () => {
    const search = (extra: Record<string, unknown>) => ({
      type: "conversation.search",
      query: "q",
      ...extra,
    });
    expect(boundary((n) => search({ query: "😀".repeat(n) }), LIMITS.searchQueryChars)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => search({ limit: n }), LIMITS.searchResults)).toEqual(["ok", "bad_request"]);
    expect(client(search({ limit: 0 }))).toBe("bad_request");
    const status = (text: string) => ({
      type: "conversation.status",
      conversation_id: conv,
      status: "idle",
      pending: 0,
      unread: 0,
      preview: { role: "assistant", text, ts },
      archived: false,
    });
    expect(boundary((n) => status("p".repeat(n)), LIMITS.inboxPreviewChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    const hit = (snippet: string) => ({ conversation_id: conv, message_id: "m1", snippet, ts });
    const results = (list: unknown[]) => ({ type: "conversation.results", query: "q", results: list });
    expect(boundary((n) => results([hit("s".repeat(n))]), LIMITS.searchSnippetChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => results(Array(n).fill(hit("s"))), LIMITS.searchResults, server)).toEqual([
      "ok",
      "bad_request",
    ]);
  });

  it("workspaces: IDs of 1..32 [a-z0-9-], names of 200, 64 agents, 256 workspaces", () => {
    const create = (extra: Record<string, unknown>) => ({ type: "conversation.create", ...extra });
    expect(boundary((n) => create({ agent_id: "a".repeat(n) }), LIMITS.workspaceIdChars)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => create({ workspace_id: "w".repeat(n) }), LIMITS.workspaceIdChars)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(client(create({ workspace_id: "" }))).toBe("bad_request");
    expect(client(create({ agent_id: "claude-2", workspace_id: "site-9", worktree: false }))).toBe("ok");
    for (const bad of ["Claude", "a_b", "a b", "a/b", "é"])
      expect(client(create({ agent_id: bad })), bad).toBe("bad_request");
    for (const type of ["models.list", "models.current", "reasoning.current"]) {
      expect(boundary((n) => ({ type, agent_id: "a".repeat(n) }), LIMITS.workspaceIdChars)).toEqual([
        "ok",
        "bad_request",
      ]);
    }
    const agent = (name: string) => ({ agent_id: "claude", name, status: "ready" });
    expect(
      boundary(
        (n) => ({ type: "agents.changed", agent: agent("n".repeat(n)) }),
        LIMITS.workspaceNameChars,
        server,
      ),
    ).toEqual(["ok", "bad_request"]);
    const agents = (n: number) => ({ type: "agents.snapshot", agents: Array(n).fill(agent("A")) });
    expect(boundary(agents, LIMITS.agents, server)).toEqual(["ok", "bad_request"]);
    const workspace = (name: string, ids: string[] = ["claude"]) => ({
      workspace_id: "site",
      name,
      agents: ids,
      git: true,
    });
    const workspaces = (list: unknown[]) => ({ type: "workspaces.snapshot", workspaces: list });
    expect(boundary((n) => workspaces(Array(n).fill(workspace("W"))), LIMITS.workspaces, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(
      boundary((n) => workspaces([workspace("n".repeat(n))]), LIMITS.workspaceNameChars, server),
    ).toEqual(["ok", "bad_request"]);
    expect(
      boundary((n) => workspaces([workspace("W", Array(n).fill("claude"))]), LIMITS.agents, server),
    ).toEqual(["ok", "bad_request"]);
  });

  it("changes: file IDs of 1..64, 1,000 files, patches of 256 KiB of UTF-8", () => {
    const diff = (fileId: string) => ({ type: "changes.diff", conversation_id: conv, file_id: fileId });
    expect(boundary((n) => diff("f".repeat(n)), LIMITS.changesFileIdChars)).toEqual(["ok", "bad_request"]);
    expect(client(diff(""))).toBe("bad_request");
    const base = { commit: "3f786850e387550fdab836ed7e6dc881de23001b", label: "3f78685" };
    const file = (fileId: string) => ({
      file_id: fileId,
      path: "a.txt",
      status: "modified",
      type: "file",
      additions: 1,
      deletions: 0,
      binary: false,
    });
    const snapshot = (files: unknown[]) => ({
      type: "changes.snapshot",
      conversation_id: conv,
      base,
      files,
      truncated: true,
    });
    expect(boundary((n) => snapshot(Array(n).fill(file("f1"))), LIMITS.changesFiles, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(boundary((n) => snapshot([file("f".repeat(n))]), LIMITS.changesFileIdChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(server(snapshot([]))).toBe("ok");
    expect(server({ ...snapshot([]), base: { ...base, commit: "a".repeat(64) } })).toBe("ok");
    expect(server({ ...snapshot([]), base: { ...base, commit: "a".repeat(41) } })).toBe("bad_request");
    const patch = (text: string | null) => ({
      type: "changes.file",
      conversation_id: conv,
      file_id: "f1",
      path: "a.txt",
      patch: text,
      truncated: true,
    });
    // Bytes, not characters: "é" is two bytes of UTF-8.
    expect(boundary((n) => patch("a".repeat(n)), LIMITS.changesPatchBytes, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    expect(server(patch("é".repeat(LIMITS.changesPatchBytes / 2)))).toBe("ok");
    expect(server(patch(`${"é".repeat(LIMITS.changesPatchBytes / 2)}a`))).toBe("bad_request");
    expect(server(patch(null))).toBe("ok");
  });

  it("devices: pairing codes of 22..128 URL-safe characters", () => {
    const hello = (n: number) => ({
      type: "hello",
      protocol_version: 1,
      features: ["devices"],
      pairing_code: "k".repeat(n),
    });
    expect(boundary(hello, LIMITS.pairingCodeMaxChars)).toEqual(["ok", "bad_request"]);
    expect([
      client(hello(LIMITS.pairingCodeMinChars)),
      client(hello(LIMITS.pairingCodeMinChars - 1)),
    ]).toEqual(["ok", "bad_request"]);
  });

  it("push payload: texts of 256 characters, tags of 32, and 3,993 bytes of JSON in all", () => {
    const payload = (extra: Record<string, unknown>) => ({
      v: 1,
      kind: "test",
      tag: "t",
      ts,
      subscription_id: "s",
      ...extra,
    });
    const ok = (value: unknown) => PushPayload.safeParse(value).success;
    expect([ok(payload({ title: "é".repeat(256) })), ok(payload({ title: "é".repeat(257) }))]).toEqual([
      true,
      false,
    ]);
    expect([ok(payload({ tag: "t".repeat(32) })), ok(payload({ tag: "t".repeat(33) }))]).toEqual([
      true,
      false,
    ]);
    // Fill a clarify payload's choices to exactly 3,993 bytes, then one byte more.
    const base = {
      v: 1,
      kind: "clarify",
      tag: "t",
      ts,
      conversation_id: conv,
      clarify_id: "c",
      allow_free_text: true,
    };
    const sized = (bytes: number) => {
      const choices = Array.from({ length: 21 }, () => "x".repeat(180));
      const size = () => Buffer.byteLength(JSON.stringify({ ...base, choices }));
      choices[20] = "x".repeat(180 - (size() - bytes));
      expect(size()).toBe(bytes);
      return { ...base, choices };
    };
    expect([ok(sized(LIMITS.pushPayloadBytes)), ok(sized(LIMITS.pushPayloadBytes + 1))]).toEqual([
      true,
      false,
    ]);
  });

  it("thoughts: 64,000 characters (code points) per thought, on deltas, completes and history", () => {
    expect(LIMITS).toMatchObject({ thoughtChars: 64_000, thoughtCharsPerRun: 256_000 });
    const ids = { conversation_id: conv, run_id: "r", thought_id: "t" };
    const delta = (n: number) => ({ type: "thought.delta", ...ids, offset: 0, text: "🤔".repeat(n), ts });
    const complete = (n: number) => ({ type: "thought.complete", ...ids, text: "x".repeat(n), ts });
    const history = (n: number) => ({
      type: "conversation.history",
      conversation_id: conv,
      messages: [],
      has_more: false,
      attachments: [],
      run: null,
      tools: [],
      approvals: [],
      clarifications: [],
      thoughts: [{ thought_id: "t", run_id: "r", text: "x".repeat(n), complete: true }],
    });
    for (const make of [delta, complete, history]) {
      expect(boundary(make, LIMITS.thoughtChars, server)).toEqual(["ok", "bad_request"]);
    }
  });
});

describe("activity limits", () => {
  const tool = (extra: Record<string, unknown>) => ({
    type: "tool.event",
    conversation_id: conv,
    tool_call_id: "t1",
    tool_name: "Read",
    status: "completed",
    ts,
    ...extra,
  });
  const text = (n: number) => ({ type: "text", text: "é".repeat(n), truncated: n > 0 });
  const other = { type: "other", label: "image" };
  const diff = (patch: string) => ({
    type: "diff",
    path: "a.txt",
    display: "a.txt",
    outside: false,
    patch,
    additions: 0,
    deletions: 0,
    fragment: false,
    truncated: false,
  });

  it("are the documented numbers", () => {
    expect(LIMITS).toMatchObject({
      toolTitleChars: 500,
      toolLocations: 50,
      toolContentBlocks: 20,
      toolPatchBytes: 65_536,
      toolTextChars: 16_000,
      toolEventBytes: 262_144,
      planEntries: 100,
      planEntryChars: 2_000,
    });
  });

  it("tool.event: titles of 500 characters, 50 locations, 20 blocks, texts of 16,000 characters", () => {
    expect(boundary((n) => tool({ title: "é".repeat(n) }), LIMITS.toolTitleChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    const location = (i: number) => ({ path: `f${i}.ts`, line: i, outside: false });
    const locations = (n: number) => tool({ locations: Array.from({ length: n }, (_, i) => location(i)) });
    expect(boundary(locations, LIMITS.toolLocations, server)).toEqual(["ok", "bad_request"]);
    const blocks = (n: number) => tool({ content: Array.from({ length: n }, () => other) });
    expect(boundary(blocks, LIMITS.toolContentBlocks, server)).toEqual(["ok", "bad_request"]);
    expect(boundary((n) => tool({ content: [text(n)] }), LIMITS.toolTextChars, server)).toEqual([
      "ok",
      "bad_request",
    ]);
    const preview = (n: number) => ({
      type: "approval.request",
      approval_id: "a",
      session_key: "s",
      conversation_id: conv,
      run_id: null,
      command: "Edit a.txt",
      description: "",
      choices: ["once", "deny"],
      ts,
      tool_call_id: "t1",
      preview: Array.from({ length: n }, () => other),
    });
    expect(boundary(preview, LIMITS.toolContentBlocks, server)).toEqual(["ok", "bad_request"]);
  });

  it("tool.event: a patch of 64 KiB of UTF-8, and 256 KiB of JSON in all", () => {
    // "é" is 2 bytes: 32,768 of them are exactly 64 KiB; one ASCII byte more is over.
    const half = "é".repeat(LIMITS.toolPatchBytes / 2);
    expect([server(tool({ content: [diff(half)] })), server(tool({ content: [diff(`${half}x`)] }))]).toEqual([
      "ok",
      "bad_request",
    ]);
    // Four patches of 62,000 bytes, the last text block (under its own limit) sized to put the event at exactly the limit.
    const patches = Array.from({ length: 4 }, () => diff("p".repeat(62_000)));
    const sized = (bytes: number) => {
      const content: Record<string, unknown>[] = [...patches, text(0)];
      const size = () => Buffer.byteLength(JSON.stringify(tool({ content })));
      const fill = bytes - size();
      content[4] = { type: "text", text: "x".repeat(fill), truncated: false };
      expect(size()).toBe(bytes);
      return tool({ content });
    };
    expect([server(sized(LIMITS.toolEventBytes)), server(sized(LIMITS.toolEventBytes + 1))]).toEqual([
      "ok",
      "bad_request",
    ]);
  });

  it("plan.updated: 100 entries of 2,000 characters", () => {
    const entry = (n: number) => ({ content: "é".repeat(n), status: "pending", priority: "low" });
    const plan = (entries: unknown[]) => ({
      type: "plan.updated",
      conversation_id: conv,
      run_id: null,
      entries,
      ts,
    });
    const many = (n: number) => plan(Array.from({ length: n }, () => entry(1)));
    expect(boundary(many, LIMITS.planEntries, server)).toEqual(["ok", "bad_request"]);
    expect(boundary((n) => plan([entry(n)]), LIMITS.planEntryChars, server)).toEqual(["ok", "bad_request"]);
  });
});

const subscription = {
  subscription_id: "s",
  device_name: null,
  endpoint_origin: "https://push.example.net",
  events: ["approval"],
  created_at: ts,
  last_success_at: null,
  last_error: null,
};

describe("replies", () => {
  it("map every request to its reply; presence has none", () => {
    // + activity (tool.get), modes (modes.list, mode.set, commands.list), inbox (conversation.read, .archive, .search),
    // workspaces (agents.list, workspaces.list), changes (changes.list, .diff)
    expect(CLIENT_MESSAGE_TYPES).toHaveLength(18 + 12 + 1 + 3 + 3 + 2 + 2);
    // + activity (plan.updated, usage.updated), thoughts (thought.delta, .complete), modes (modes.snapshot,
    // mode.changed, commands.snapshot), inbox (conversation.status, .results), workspaces (agents.snapshot,
    // agents.changed, workspaces.snapshot), changes (changes.snapshot, .file, .changed)
    expect(SERVER_MESSAGE_TYPES).toHaveLength(27 + 13 + 2 + 2 + 3 + 2 + 3 + 3);
    expect(Object.keys(REPLY_TYPES).sort()).toEqual(
      CLIENT_MESSAGE_TYPES.filter((t) => t !== "presence").sort(),
    );
    expect(NO_REPLY_TYPES).toEqual(["presence"]);
    for (const reply of Object.values(REPLY_TYPES)) expect(SERVER_MESSAGE_TYPES).toContain(reply);
  });

  it("know the replies a request gets when it uses an extension", () => {
    expect(ALTERNATIVE_REPLY_TYPES).toEqual({
      "chat.send": "run.queued",
      "conversation.open": "conversation.resumed",
    });
    expect(isReplyType("chat.send", "run.accepted")).toBe(true);
    expect(isReplyType("chat.send", "run.queued")).toBe(true);
    expect(isReplyType("conversation.open", "conversation.resumed")).toBe(true);
    expect(isReplyType("schedule.delete", "schedule.changed")).toBe(true);
    expect(isReplyType("chat.send", "run.finished")).toBe(false);
    expect(isReplyType("presence", "pong")).toBe(false);
  });
});
