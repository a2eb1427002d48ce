// The changes extension's patches redacted as activity's diffs are, end to end over real sockets: a
// real server on 127.0.0.1:0 and real git repositories in temp dirs. An `.env` change shows no value,
// a source file's token and private key are redacted, an ordinary change is git's patch byte for byte,
// every redacted patch is still one git reads with the counts the snapshot gives, and the 256 KiB
// bound holds after redaction lengthened the text (at the limit and one byte over).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FEATURE_CHANGES, LIMITS, type ServerMessageOf } from "@pheby/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { createSimulatorBackend } from "../src/index.js";
import { git, repoWith, tempDir } from "./git-fixtures.js";
import { createConversation, helloWith, type RawClient, startServer, type TestServer } from "./helpers.js";

const servers: TestServer[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.cleanup();
});

type Snapshot = ServerMessageOf<"changes.snapshot">;
type File = Snapshot["files"][number];

/** A `changes` connection to a real server whose (simulator) agent works in `dir`, and a new conversation. */
async function open(dir: string): Promise<{ c: RawClient; conv: string }> {
  const ts = await startServer({ agent: { ...createSimulatorBackend({ delayMs: 1 }), workdir: () => dir } });
  servers.push(ts);
  const c = await helloWith(ts, [FEATURE_CHANGES]);
  clients.push(c);
  return { c, conv: await createConversation(c) };
}

async function files(c: RawClient, conv: string): Promise<Map<string, File>> {
  const snapshot = await c.ok({ type: "changes.list", conversation_id: conv }, "changes.snapshot");
  return new Map(snapshot.files.map((f) => [f.path, f]));
}

async function diff(c: RawClient, conv: string, file: File): Promise<ServerMessageOf<"changes.file">> {
  return c.ok({ type: "changes.diff", conversation_id: conv, file_id: file.file_id }, "changes.file");
}

/** Git's own reading of a patch (`git apply --numstat`): it fails on a hunk whose lines do not match its header. */
function numstatOf(patch: string): string {
  const dir = tempDir("pheby-patch-");
  writeFileSync(join(dir, "p.diff"), patch);
  return git(dir, "apply", "--numstat", "p.diff");
}

/** Git's patch of `path` against `base`, as the server asks for it (without the runner). */
function gitPatch(dir: string, base: string, path: string): string {
  return git(
    dir,
    "diff",
    base,
    "-M",
    "-U3",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--",
    path,
  );
}

const TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ";
const KEY_BODY = [
  "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
  "q9v8Xw2LmN4pR7sT1uV3yZ5aB6cD8eF0gH2iJ4kL6mN8oP0qR2",
];

describe("changes.file patches are redacted as activity's diffs are", () => {
  it("shows no value of an .env file, no token or private key of a source file, and an ordinary change intact", async () => {
    const env = [
      "# settings",
      "DEBUG=false",
      "APP_NAME=pheby-demo",
      "REGION=eu-west-1",
      "PORT=8080",
      "LOG_LEVEL=heading-value-7q",
      "A=1",
      "B=2",
      "C=3",
      "D=4",
      "",
    ];
    const dir = repoWith({
      ".env": env.join("\n"),
      "src/client.ts": 'export const url = "https://example.com";\nexport const retries = 3;\n',
      "README.md": "# Demo\n\nRun it.\n",
    });
    const base = git(dir, "rev-parse", "HEAD").trim();
    const { c, conv } = await open(dir);
    writeFileSync(
      join(dir, ".env"),
      [...env.slice(0, -2), "D=changed-value-9z", "STRIPE_KEY=plainvalue42", ""].join("\n"),
    );
    writeFileSync(
      join(dir, "src/client.ts"),
      [
        'export const url = "https://example.com";',
        `export const token = "${TOKEN}";`,
        "export const retries = 3;",
        "export const key = `-----BEGIN PRIVATE KEY-----",
        ...KEY_BODY,
        "-----END PRIVATE KEY-----`;",
        "",
      ].join("\n"),
    );
    writeFileSync(join(dir, "README.md"), "# Demo\n\nRun it with `pnpm start`.\n");
    // The .env hunk's section heading is a line of the file, with its value (so the test can fail).
    expect(gitPatch(dir, base, ".env")).toContain("@@ LOG_LEVEL=heading-value-7q");

    const listed = await files(c, conv);
    const envPatch = (await diff(c, conv, listed.get(".env")!)).patch!;
    for (const value of ["A=1", "B=2", "C=3", "D=4", "heading-value-7q", "changed-value-9z", "plainvalue42"])
      expect(envPatch).not.toContain(value);
    // Every line is still there, names and all: which settings changed shows, their values do not.
    expect(envPatch).toContain(" A=[REDACTED]\n B=[REDACTED]\n C=[REDACTED]\n");
    expect(envPatch).toContain("-D=[REDACTED]\n+D=[REDACTED]\n+STRIPE_KEY=[REDACTED]\n");
    expect(envPatch).toMatch(/^@@ -\d+,\d+ \+\d+,\d+ @@ LOG_LEVEL=\[REDACTED\]$/m);

    const source = await diff(c, conv, listed.get("src/client.ts")!);
    expect(source.truncated).toBe(false);
    expect(source.patch).not.toContain(TOKEN);
    for (const line of KEY_BODY) expect(source.patch).not.toContain(line);
    expect(source.patch).toContain('+export const token = "[REDACTED]";\n');
    expect(source.patch).toContain(
      "+export const key = `-----BEGIN PRIVATE KEY-----[REDACTED]\n+[REDACTED]\n",
    );
    expect(source.patch).toContain(' export const url = "https://example.com";\n');

    // Still patches git reads, with the counts the snapshot gives (git's numstat of the work tree).
    for (const [path, patch] of [
      [".env", envPatch],
      ["src/client.ts", source.patch!],
    ] as const) {
      const f = listed.get(path)!;
      expect(numstatOf(patch)).toBe(`${f.additions}\t${f.deletions}\t${path}\n`);
      expect(patch.split("\n").length).toBe(gitPatch(dir, base, path).split("\n").length);
    }
    expect([listed.get(".env")!.additions, listed.get(".env")!.deletions]).toEqual([2, 1]);

    // An ordinary change is git's patch, byte for byte.
    const readme = await diff(c, conv, listed.get("README.md")!);
    expect(readme.patch).toBe(gitPatch(dir, base, "README.md"));
  });

  it(`keeps a redacted patch within ${LIMITS.changesPatchBytes} bytes: whole at the limit, cut one byte over`, async () => {
    const dir = repoWith({ "README.md": "x\n" });
    const { c, conv } = await open(dir);
    // Each `A=1` line grows by 9 bytes when redacted; the comment line (kept as is) sets the size.
    const write = (pad: number) =>
      writeFileSync(join(dir, "prod.env"), `${"A=1\n".repeat(18_000)}#${"p".repeat(pad)}\n`);
    write(0);
    const file = (await files(c, conv)).get("prod.env")!;
    const first = await diff(c, conv, file);
    const size = Buffer.byteLength(first.patch!);
    expect(first.truncated).toBe(false);
    expect(first.patch!.length).toBeLessThan(LIMITS.changesPatchBytes);
    // Git's own patch is far within the bound: only redaction brings it to the limit.
    expect(size).toBeGreaterThan(18_000 * "+A=[REDACTED]\n".length);

    write(LIMITS.changesPatchBytes - size);
    const atLimit = await diff(c, conv, file);
    expect(atLimit.truncated).toBe(false);
    expect(Buffer.byteLength(atLimit.patch!)).toBe(LIMITS.changesPatchBytes);
    expect(atLimit.patch!.endsWith("p\n")).toBe(true);

    write(LIMITS.changesPatchBytes - size + 1);
    const over = await diff(c, conv, file);
    expect(over.truncated).toBe(true);
    expect(Buffer.byteLength(over.patch!)).toBeLessThanOrEqual(LIMITS.changesPatchBytes);
    expect(over.patch!.endsWith("+A=[REDACTED]\n")).toBe(true);
    expect(over.patch).not.toContain("A=1");
  });
});
