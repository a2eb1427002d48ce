// Limits of schedules, in a module of their own so Pheby's MCP server (a separate small
// program) can show them without loading the cron library.

/** At most this many schedules on a server (each a timer and an SQLite row). */
export const MAX_SCHEDULES = 100;
/** A scheduled prompt is sent like a chat message: the chat text limit applies. */
export const MAX_PROMPT_CHARS = 64_000;
/** Schedule names follow conversation names. */
export const MAX_NAME_CHARS = 200;
/** Default of the grace within which one missed occurrence still runs at start (1 hour). */
export const DEFAULT_MISSED_GRACE_MS = 60 * 60 * 1000;
