/**
 * Which session an MCP tool call comes from, for agents whose one MCP server process serves all
 * their sessions (Hermes registers ACP-provided servers process-wide by name, OpenCode per
 * working directory): the session running a turn, and when several are, the one whose turn
 * shows an open tool call of that tool with those arguments (agents report the call over ACP
 * before they make it).
 */

/** A session with a running turn, and the tool calls its turn has shown. */
export interface TurnInProgress {
  sessionId: string;
  tools: ReadonlyArray<{ name: string; args: Record<string, unknown> | undefined; ended: boolean }>;
}

/** The session an MCP call of `tool` with `args` belongs to, or null when it cannot be told. */
export function callerOf(
  turns: readonly TurnInProgress[],
  call: { tool: string; args: Record<string, unknown> },
): string | null {
  if (turns.length === 1) return turns[0]!.sessionId;
  const wanted = canonical(call.args);
  const open = (turn: TurnInProgress, sameArgs: boolean) =>
    turn.tools.some(
      (t) =>
        !t.ended &&
        t.name.includes(call.tool) &&
        (!sameArgs || t.args === undefined || canonical(t.args) === wanted),
    );
  // The same tool with the same arguments first; an agent that reports other arguments (or
  // none) is matched by the tool alone. Either way only a single match counts.
  for (const sameArgs of [true, false]) {
    const matching = turns.filter((turn) => open(turn, sameArgs));
    if (matching.length === 1) return matching[0]!.sessionId;
    if (matching.length > 1) return null;
  }
  return null;
}

/** JSON with sorted keys, so argument objects compare by value. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}
