/**
 * Which agent modes approve without asking Pheby: the one table the server decides by (the
 * `auto_approves` of `modes.snapshot`, the asking mode of a run nobody started from a client, a
 * revoked device's choice undone) and the ACP backend moves out of. docs/agents.md lists it per agent.
 */

/**
 * Mode IDs in which the agent runs tools without asking Pheby, by agent, as each names them. The
 * lookup ignores case, `-` and `_` (Gemini CLI says `autoEdit`, Qwen Code `auto-edit`).
 */
export const AUTO_APPROVING_MODES = {
  "Claude Code": ["bypassPermissions", "acceptEdits"],
  "Qwen Code": ["yolo", "auto-edit"],
  "Gemini CLI": ["yolo", "autoEdit"],
  Codex: ["full-access"],
  "Pheby simulator": ["yolo", "auto-edit"],
} as const satisfies Record<string, readonly string[]>;

const key = (modeId: string) => modeId.toLowerCase().replace(/[-_\s]/g, "");
const AUTO_APPROVING = new Set(Object.values(AUTO_APPROVING_MODES).flatMap((ids) => ids.map(key)));

/** Whether, in the mode `modeId`, the agent runs tools without asking Pheby. */
export function autoApproves(modeId: string): boolean {
  return AUTO_APPROVING.has(key(modeId));
}

/** The YOLO-like modes among them: everything runs without asking (not only edits). */
const YOLO_LIKE = /yolo|bypass|fullaccess/;

/**
 * The mode YOLO puts a session in: the first of `modeIds` that approves everything without asking
 * (`yolo`, `bypassPermissions`, `full-access`), or undefined when the agent has none (YOLO then only
 * answers its permission questions).
 */
export function yoloModeOf(modeIds: readonly string[]): string | undefined {
  return modeIds.find((id) => autoApproves(id) && YOLO_LIKE.test(key(id)));
}

/**
 * The mode a session returns to when it may not stay in one that approves without asking:
 * `preferred` (the agent entry's configured mode, else the agent's own default) when it asks, else
 * the first mode that asks; undefined when every mode approves without asking.
 */
export function askingModeOf(modeIds: readonly string[], preferred?: string | null): string | undefined {
  if (preferred && modeIds.includes(preferred) && !autoApproves(preferred)) return preferred;
  return modeIds.find((id) => !autoApproves(id));
}
