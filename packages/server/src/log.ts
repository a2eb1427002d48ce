import { type Logger, pino } from "pino";

/** Secret-ish fields pino always censors, as belt and braces: the code never logs them on purpose. */
const SECRET_PATHS = [
  "secret",
  "*.secret",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "headers.cookie",
  "*.headers.cookie",
  'headers["x-pheby-secret"]',
  '*.headers["x-pheby-secret"]',
  // A request URL may carry a secret a client put in its query string; log route parameters instead.
  "url",
  "*.url",
];
/** Chat-text fields, censored unless the operator enabled `logChatContent`. */
const CHAT_PATHS = ["text", "*.text", "response", "*.response"];

/** The server's logger: a child of the operator's (or a silent one) with redaction configured. */
export function serverLogger(base: Logger | undefined, logChatContent: boolean): Logger {
  const parent = base ?? pino({ level: "silent" });
  const paths = logChatContent ? SECRET_PATHS : [...SECRET_PATHS, ...CHAT_PATHS];
  return parent.child({ component: "pheby-server" }, { redact: { paths, censor: "[REDACTED]" } });
}
