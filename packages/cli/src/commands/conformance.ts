import { writeFile } from "node:fs/promises";
import { formatReport, formatResult, runConformance, toJUnit } from "@pheby/conformance";
import { type Command, EXIT, intFlag } from "../command.js";
import { writeJson, writeLine } from "../io.js";

export const conformance: Command = {
  name: "conformance",
  usage: "[--no-simulator] [--junit FILE] [--auth-timeout-ms N] [--only PATTERN]… [--skip PATTERN]…",
  summary:
    "Run the Pheby v1 conformance suite against the server and report each check as PASS/FAIL/SKIP with its spec section. Exits 5 when a check fails.",
  details: [
    "  --no-simulator        the server has no /sim scenarios: skip the checks that need them",
    "  --junit FILE          also write a JUnit XML report for CI",
    "  --auth-timeout-ms N   the server's auth timeout; enables the auth-timeout check",
    "  --no-auth-failures    skip the checks that send failing hellos (4 per run; the lockout allows 5 per 60 s)",
    "  --only PATTERN        run only matching check ids (repeatable; * is a wildcard, e.g. runs.*)",
    "  --skip PATTERN        skip matching check ids (repeatable)",
    "  --timeout-ms N        how long to wait for each expected frame (default 10000)",
  ],
  options: {
    "no-simulator": { type: "boolean" },
    junit: { type: "string" },
    "auth-timeout-ms": { type: "string" },
    "no-auth-failures": { type: "boolean" },
    only: { type: "string", multiple: true },
    skip: { type: "string", multiple: true },
    "timeout-ms": { type: "string" },
  },
  examples: [
    'pheby conformance --url ws://127.0.0.1:8620/ws --secret "$PHEBY_SECRET"',
    "pheby conformance --no-simulator --junit conformance.xml --skip 'attachments.*'",
  ],
  async run({ flags, io, server }) {
    const { url, secret } = server();
    const json = flags.json === true;
    const authTimeoutMs = intFlag(flags, "auth-timeout-ms");
    const timeoutMs = intFlag(flags, "timeout-ms");
    const report = await runConformance({
      url,
      secret,
      simulator: flags["no-simulator"] !== true,
      authFailures: flags["no-auth-failures"] !== true,
      ...(authTimeoutMs === undefined ? {} : { authTimeoutMs }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      only: (flags.only as string[] | undefined) ?? [],
      skip: (flags.skip as string[] | undefined) ?? [],
      onResult: (result) => (json ? writeJson(io, result) : writeLine(io, formatResult(result))),
    });
    if (typeof flags.junit === "string") await writeFile(flags.junit, toJUnit(report));
    if (json)
      writeJson(io, {
        summary: report.summary,
        frames: report.frames,
        ok: report.ok,
        durationMs: report.durationMs,
      });
    else writeLine(io, formatReport(report).split("\n").at(-1));
    return report.ok ? EXIT.ok : EXIT.failed;
  },
};
