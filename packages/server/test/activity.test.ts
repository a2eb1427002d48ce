/**
 * The `activity` extension on a real server with the simulator: a tool call's detail (kind, title,
 * locations, content) and an approval's call and preview reach `activity` connections only; `tool.get`
 * answers from the recorded calls; history carries the detail; the resume log collapses one call's
 * consecutive events; a connection without the feature gets v1, byte for byte.
 */
import {
  FEATURE_ACTIVITY,
  FEATURE_RESUME,
  type ServerMessage,
  type ServerMessageOf,
  type ToolContentBlock,
} from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { SIM_DIFF, SIM_OUTPUT } from "../src/agent/simulator/index.js";
import type { TurnResult } from "../src/index.js";
import { approvalPush } from "../src/push/payload.js";
import {
  createConversation,
  RawClient,
  scriptedBackend,
  send,
  startServer,
  type TestServer,
} from "./helpers.js";

const ACTIVITY = [FEATURE_ACTIVITY];
const V1_TOOL_FIELDS = [
  "type",
  "conversation_id",
  "run_id",
  "tool_call_id",
  "tool_name",
  "status",
  "args_redacted",
  "duration_ms",
  "error",
  "ts",
];

type ToolEvent = ServerMessageOf<"tool.event">;

const toolEvents = (c: RawClient, id: string) =>
  c.frames.filter((f): f is ToolEvent => f.type === "tool.event" && f.conversation_id === id);

describe("the activity extension", () => {
  const servers: TestServer[] = [];
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.cleanup();
  });

  async function setup(options: Parameters<typeof startServer>[0] = {}) {
    const ts = await startServer(options);
    servers.push(ts);
    const phone = await RawClient.connect(ts.wsUrl, { features: ACTIVITY });
    const v1 = await RawClient.connect(ts.wsUrl);
    clients.push(phone, v1);
    return { ts, phone, v1 };
  }

  it("is offered: ready lists it when asked", async () => {
    const { phone, v1 } = await setup();
    const ready = phone.frames.find((f) => f.type === "ready") as ServerMessageOf<"ready">;
    expect(ready.features).toEqual([FEATURE_ACTIVITY]);
    expect((v1.frames.find((f) => f.type === "ready") as ServerMessageOf<"ready">).features ?? []).toEqual(
      [],
    );
  });

  it("/sim diff: the edit's diff on the tool event and as the approval's preview; v1 gets neither", async () => {
    const { phone, v1 } = await setup();
    const id = await createConversation(phone);
    const runId = await send(phone, id, "/sim diff");
    const ask = await phone.next("approval.request");
    const v1Ask = await v1.next("approval.request");
    const running = toolEvents(phone, id)[0]!;
    expect(running).toMatchObject({
      status: "running",
      kind: "edit",
      title: `Edit ${SIM_DIFF.path}`,
      locations: [{ path: SIM_DIFF.path, line: 2, outside: false }],
    });
    const diff = running.content![0] as Extract<ToolContentBlock, { type: "diff" }>;
    expect(diff).toMatchObject({
      type: "diff",
      path: SIM_DIFF.path,
      display: SIM_DIFF.path,
      outside: false,
      additions: 2,
      deletions: 2,
      fragment: false,
      truncated: false,
    });
    expect(diff.patch).toBe(
      [
        `--- ${SIM_DIFF.path}`,
        `+++ ${SIM_DIFF.path}`,
        "@@ -1,5 +1,5 @@",
        " export function greet(name: string) {",
        '-  return "Hello " + name;',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a line of the simulated TypeScript file
        "+  return `Hello, ${name}!`;",
        " }",
        " ",
        "-export const version = 1;",
        "+export const version = 2;",
        "",
      ].join("\n"),
    );
    expect(ask).toMatchObject({ tool_call_id: running.tool_call_id, preview: [diff] });
    // v1: the same approval and tool events, without a field of the extension.
    expect(Object.keys(v1Ask).sort()).toEqual(
      [
        "type",
        "approval_id",
        "session_key",
        "conversation_id",
        "run_id",
        "command",
        "description",
        "choices",
        "ts",
      ].sort(),
    );
    for (const e of toolEvents(v1, id))
      for (const key of Object.keys(e)) expect(V1_TOOL_FIELDS, key).toContain(key);

    phone.send({ type: "approval.respond", approval_id: ask.approval_id, choice: "once" });
    await phone.run(runId);
    await v1.next("run.finished", (f) => f.run_id === runId);
    const phoneTools = toolEvents(phone, id);
    const v1Tools = toolEvents(v1, id);
    expect(phoneTools.map((e) => e.status)).toEqual(["running", "completed"]);
    expect(v1Tools.map((e) => e.status)).toEqual(["running", "completed"]);
    // Content travels again only when it changed: the completion carries the rest of the detail.
    expect(phoneTools[1]).not.toHaveProperty("content");
    expect(phoneTools[1]).toMatchObject({ kind: "edit", title: `Edit ${SIM_DIFF.path}` });
    // Strip the extension's fields: what is left is the v1 frame, byte for byte.
    const strip = ({ kind: _k, title: _t, locations: _l, content: _c, ...rest }: ToolEvent) => rest;
    expect(phoneTools.map((e) => JSON.stringify(strip(e)))).toEqual(v1Tools.map((e) => JSON.stringify(e)));
  });

  it("tool.get answers with the latest state and detail, also of an older run; not_found and unknown_type", async () => {
    const { phone, v1 } = await setup();
    const id = await createConversation(phone);
    const first = await send(phone, id, "/sim output");
    await phone.run(first);
    const callId = toolEvents(phone, id)[0]!.tool_call_id;
    await phone.run(await send(phone, id, "/sim tools"));

    const got = await phone.ok({ type: "tool.get", conversation_id: id, tool_call_id: callId }, "tool.event");
    expect(got).toMatchObject({
      conversation_id: id,
      run_id: first,
      tool_call_id: callId,
      tool_name: "shell",
      status: "completed",
      kind: "execute",
      title: SIM_OUTPUT.command,
      locations: [],
    });
    const [block] = got.content as Extract<ToolContentBlock, { type: "text" }>[];
    expect(block!.text).toContain("3 passed");
    expect(block!.text).not.toContain(SIM_OUTPUT.secret);
    expect(block!.text).toContain("[REDACTED]");
    expect(JSON.stringify(phone.frames)).not.toContain(SIM_OUTPUT.secret);

    await phone.expectError(
      { type: "tool.get", conversation_id: id, tool_call_id: "no-such-call" },
      "not_found",
      "tool.get of an unknown call",
    );
    await phone.expectError(
      { type: "tool.get", conversation_id: "0".repeat(32), tool_call_id: callId },
      "conversation_not_found",
      "tool.get in an unknown conversation",
    );
    await v1.expectError(
      { type: "tool.get", conversation_id: id, tool_call_id: callId },
      "unknown_type",
      "tool.get without activity",
    );
  });

  it("conversation.history: the tools' detail and a pending approval's preview on activity connections only", async () => {
    const { phone, v1 } = await setup();
    const id = await createConversation(phone);
    await send(phone, id, "/sim diff");
    const ask = await phone.next("approval.request");
    const history = await phone.ok(
      { type: "conversation.open", conversation_id: id },
      "conversation.history",
    );
    expect(history.tools[0]).toMatchObject({
      kind: "edit",
      content: [{ type: "diff", path: SIM_DIFF.path }],
    });
    expect(history.approvals[0]).toMatchObject({ tool_call_id: ask.tool_call_id, preview: ask.preview });
    const plain = await v1.ok({ type: "conversation.open", conversation_id: id }, "conversation.history");
    expect(plain.tools[0]).not.toHaveProperty("kind");
    expect(plain.tools[0]).not.toHaveProperty("content");
    expect(plain.approvals[0]).not.toHaveProperty("preview");
    expect(plain.approvals[0]).not.toHaveProperty("tool_call_id");
    phone.send({ type: "approval.respond", approval_id: ask.approval_id, choice: "deny" });
    await phone.next("run.finished");
  });

  it("a detail-only change reaches activity connections only; the resume log keeps one event per call", async () => {
    const agent = scriptedBackend("scripted", async (_input, sink): Promise<TurnResult> => {
      sink.toolStart({
        toolCallId: "t1",
        toolName: "shell",
        args: { command: "make" },
        detail: { kind: "execute" },
      });
      sink.toolDetail?.({
        toolCallId: "t1",
        detail: { kind: "execute", content: [{ type: "text", text: "building", truncated: false }] },
      });
      sink.toolDetail?.({
        toolCallId: "t1",
        detail: { kind: "execute", content: [{ type: "text", text: "building\ndone", truncated: false }] },
      });
      sink.toolEnd({ toolCallId: "t1", status: "completed" });
      sink.text("Built.");
      return { status: "completed" };
    });
    const { ts, phone, v1 } = await setup({ agent });
    const id = await createConversation(phone);
    const resumer = await RawClient.connect(ts.wsUrl, { features: [FEATURE_RESUME, FEATURE_ACTIVITY] });
    const plainResumer = await RawClient.connect(ts.wsUrl, { features: [FEATURE_RESUME] });
    clients.push(resumer, plainResumer);
    const opened = await resumer.ok(
      { type: "conversation.open", conversation_id: id },
      "conversation.history",
    );
    const runId = await send(phone, id, "go");
    await phone.run(runId);
    await v1.next("run.finished");
    await resumer.next("run.finished");
    await plainResumer.next("run.finished");

    expect(toolEvents(phone, id).map((e) => [e.status, (e.content?.[0] as { text?: string })?.text])).toEqual(
      [
        ["running", undefined],
        ["running", "building"],
        ["running", "building\ndone"],
        ["completed", undefined],
      ],
    );
    expect(toolEvents(v1, id).map((e) => e.status)).toEqual(["running", "completed"]);

    // A reconnect replays the call once, at its latest state, with the content it last had.
    const back = await RawClient.connect(ts.wsUrl, { features: [FEATURE_RESUME, FEATURE_ACTIVITY] });
    const plainBack = await RawClient.connect(ts.wsUrl, { features: [FEATURE_RESUME] });
    clients.push(back, plainBack);
    for (const c of [back, plainBack])
      c.send({ type: "conversation.open", conversation_id: id, since_seq: opened.seq });
    await back.next("conversation.resumed");
    await plainBack.next("conversation.resumed");
    await back.next("run.finished");
    await plainBack.next("run.finished");
    const replayed = toolEvents(back, id);
    expect(replayed).toHaveLength(1);
    expect(replayed[0]).toMatchObject({
      status: "completed",
      kind: "execute",
      content: [{ type: "text", text: "building\ndone" }],
    });
    const plainReplayed = toolEvents(plainBack, id);
    expect(plainReplayed).toHaveLength(1);
    expect(plainReplayed[0]).not.toHaveProperty("content");
    expect(plainReplayed[0]!.status).toBe("completed");
  });

  it("push: an edit approval's body names the file and its +additions −deletions", () => {
    const base = {
      approval_id: "a1",
      conversation_id: "c".repeat(32),
      command: "Edit src/app.ts",
      description: "Edit a file",
      choices: ["once", "deny"] as const,
      conversationName: "Chat",
    };
    const now = Date.parse("2026-09-02T18:00:00Z");
    expect(approvalPush(base, now).texts.body).toBe("Edit src/app.ts");
    const edit = approvalPush(
      { ...base, diffs: [{ display: "src/app.ts", additions: 12, deletions: 3 }] },
      now,
    );
    expect(edit.texts.body).toBe("src/app.ts +12 \u22123");
    const two = approvalPush(
      {
        ...base,
        diffs: [
          { display: "src/app.ts", additions: 1, deletions: 0 },
          { display: "src/b.ts", additions: 2, deletions: 5 },
        ],
      },
      now,
    );
    expect(two.texts.body).toBe("src/app.ts and 1 more file +3 \u22125");
  });

  it("every frame of a whole /sim diff run on a v1 connection is v1 (none of the extension's fields)", async () => {
    const { phone, v1 } = await setup();
    const id = await createConversation(phone);
    const runId = await send(v1, id, "/sim diff");
    const ask = await v1.next("approval.request");
    v1.send({ type: "approval.respond", approval_id: ask.approval_id, choice: "once" });
    await v1.run(runId);
    const extension: Record<string, string[]> = {
      "tool.event": ["kind", "title", "locations", "content"],
      "approval.request": ["tool_call_id", "preview"],
    };
    const seen = (v1.frames as ServerMessage[]).filter((f) => f.type in extension);
    expect(seen.map((f) => f.type)).toEqual(["tool.event", "approval.request", "tool.event"]);
    for (const frame of seen)
      for (const key of extension[frame.type]!) expect(frame, `${frame.type}.${key}`).not.toHaveProperty(key);
    await phone.next("run.finished");
  });
});
