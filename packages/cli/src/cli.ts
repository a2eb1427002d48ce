import { readFileSync } from "node:fs";
import { DEFAULT_FEATURES, PhebyClient } from "@pheby/client";
import { PROTOCOL_VERSION } from "@pheby/protocol";
import { type Command, commandHelp, parseCommandArgs, serverSettings } from "./command.js";
import { agents, workspaces } from "./commands/agents.js";
import { changes } from "./commands/changes.js";
import { chat } from "./commands/chat.js";
import { conformance } from "./commands/conformance.js";
import { conversations } from "./commands/conversations.js";
import { devices, pair } from "./commands/devices.js";
import { attachments, download, upload } from "./commands/files.js";
import { history } from "./commands/history.js";
import { commands, modes } from "./commands/modes.js";
import { push } from "./commands/push.js";
import { schedule } from "./commands/schedule.js";
import { search } from "./commands/search.js";
import { model, models, reasoning, yolo } from "./commands/settings.js";
import { tail } from "./commands/tail.js";
import { tool } from "./commands/tool.js";
import { describeError, EXIT, exitCodeFor, UsageError } from "./exit.js";
import { type Io, note } from "./io.js";

/** Every command, in help order. */
export const COMMANDS: readonly Command[] = [
  conversations,
  chat,
  history,
  search,
  tail,
  tool,
  changes,
  upload,
  download,
  attachments,
  models,
  model,
  reasoning,
  yolo,
  modes,
  commands,
  agents,
  workspaces,
  schedule,
  pair,
  devices,
  push,
  conformance,
];

/** `pheby --version`: this package's version (package.json sits one level above both src/ and dist/). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return `pheby ${pkg.version} (Pheby Protocol v${PROTOCOL_VERSION})`;
}

/** The top-level help. */
export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "Usage: pheby <command> [arguments] [--url URL] [--secret SECRET] [--json]",
    "       pheby --version",
    "",
    "Poke a live Pheby Protocol v1 server, and test it with the conformance suite.",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary.split(". ")[0]!.replace(/\.$/, "")}`),
    "",
    "The server: --url (or PHEBY_URL; default ws://127.0.0.1:8620/ws) and --secret (or PHEBY_SECRET).",
    "Exit codes: 0 ok, 1 usage, 2 protocol error, 3 auth failure, 4 connection failure, 5 run failed / check failed.",
    "Run `pheby <command> --help` for a command's flags and an example.",
    "",
    "Example:",
    '  PHEBY_SECRET=… pheby chat "$(pheby conversations create Demo --json | jq -r .conversation_id)" "Hello"',
    "",
  ].join("\n");
}

/** Run `pheby` with `argv` (without node and the script); resolves with the exit code. Never throws. */
export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    io.stdout.write(mainHelp());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    io.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    note(io, `pheby: unknown command "${name}"\n`);
    io.stderr.write(mainHelp());
    return EXIT.usage;
  }
  const clients: PhebyClient[] = [];
  try {
    const { positionals, flags } = parseCommandArgs(command, args);
    if (flags.help === true) {
      io.stdout.write(commandHelp(command));
      return EXIT.ok;
    }
    const server = () => serverSettings(flags, io.env);
    return await command.run({
      positionals,
      flags,
      io,
      server,
      async connect(options = {}) {
        const client = new PhebyClient({
          ...server(),
          reconnect: options.reconnect ? {} : false,
          ...(options.features ? { features: [...DEFAULT_FEATURES, ...options.features] } : {}),
        });
        clients.push(client);
        await client.connect();
        return client;
      },
    });
  } catch (err) {
    note(io, `pheby ${name}: ${describeError(err)}`);
    if (err instanceof UsageError) note(io, `\n${commandHelp(command)}`);
    return exitCodeFor(err);
  } finally {
    for (const client of clients) client.close();
  }
}
