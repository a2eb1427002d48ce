/**
 * The context a replacement session gets when the agent cannot reopen one: Pheby's own history, newest kept
 * within a budget, in a tagged block; and how an agent says it no longer knows a session.
 */
import * as acp from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import {
  CONTEXT_BUDGET_CHARS,
  CONTEXT_TAG,
  contextBlock,
  isUnknownSession,
} from "../../src/agent/acp/replacement.js";
import type { TranscriptTail } from "../../src/agent/port.js";

const said = (...texts: string[]): TranscriptTail => ({
  entries: texts.map((text, i) => ({ role: i % 2 === 0 ? "user" : "assistant", text })),
  more: false,
});

/** The messages of a block, as the lines between its header and its closing tag. */
function messages(block: string): string[] {
  const body = block.slice(block.indexOf("\n\n") + 2, block.lastIndexOf("\n</conversation_so_far>"));
  return body.split("\n\n");
}

describe("contextBlock", () => {
  it("is null without history: a conversation with nothing said needs no context", () => {
    expect(contextBlock(said())).toBeNull();
    expect(contextBlock(undefined)).toBeNull();
  });

  it("gives every message, oldest first, labelled, inside the tagged block", () => {
    const block = contextBlock(said("hello", "hi there", "  what now?\n"))!;
    expect(block.startsWith(`${CONTEXT_TAG} source="pheby">\n`)).toBe(true);
    expect(block.endsWith("\n</conversation_so_far>")).toBe(true);
    expect(messages(block)).toEqual(["User: hello", "Assistant: hi there", "User: what now?"]);
    expect(block).not.toContain("left out");
  });

  it("keeps the newest messages that fit the budget and says how many it left out", () => {
    const history = said("a".repeat(40), "b".repeat(40), "c".repeat(40), "d".repeat(40));
    // "Assistant: " + 40 = 51, blank line 2, "User: " + 40 = 46: two fit in 100, three do not.
    const block = contextBlock(history, 100)!;
    expect(messages(block)).toEqual([`User: ${"c".repeat(40)}`, `Assistant: ${"d".repeat(40)}`]);
    expect(block).toContain("(Earlier messages are left out.)");
    expect(contextBlock(history, 2 * 51 + 2 * 46 + 3 * 2)).not.toContain("left out");
    // The server said there is more than it gave.
    expect(contextBlock({ ...history, more: true })).toContain("(Earlier messages are left out.)");
  });

  it("a newest message longer than the budget: its end, exactly the budget", () => {
    const long = `${"x".repeat(CONTEXT_BUDGET_CHARS)}THE END`;
    const block = contextBlock(said("before", long))!;
    const [only] = messages(block);
    expect(only).toHaveLength(CONTEXT_BUDGET_CHARS);
    expect(only!.startsWith("Assistant: …xxx")).toBe(true);
    expect(only!.endsWith("THE END")).toBe(true);
    expect(block).toContain("(Earlier messages are left out.)");
  });
});

describe("isUnknownSession", () => {
  it("ACP's not found (-32002), and an agent's own 'Session not found' behind an Internal error", () => {
    expect(isUnknownSession(acp.RequestError.sessionNotFound("s1"))).toBe(true);
    const claude = (details: string) => acp.RequestError.internalError({ details });
    expect(isUnknownSession(claude("Session not found"))).toBe(true);
    expect(isUnknownSession(claude("No such session: s1"))).toBe(true);
    expect(isUnknownSession(claude("Session with id sess-1 not found"))).toBe(true);
  });

  it("anything else is not a lost session: other errors, a dead process, plain errors", () => {
    const other = (details: string) => acp.RequestError.internalError({ details });
    expect(isUnknownSession(other("Quota exceeded"))).toBe(false);
    expect(isUnknownSession(new Error("Session not found"))).toBe(false);
    expect(isUnknownSession(other("the session file was written; model not found"))).toBe(false);
  });
});
