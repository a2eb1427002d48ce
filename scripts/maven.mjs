#!/usr/bin/env node
// Builds or tests one module of the Kotlin reactor (pom.xml at the repository root) for turbo:
//
//   node scripts/maven.mjs build <module> [mvn args…]   mvn install, tests skipped: the artifacts land in ~/.m2
//   node scripts/maven.mjs test <module> [mvn args…]    mvn verify: unit tests, then integration tests
//
// Without mvn or java it prints SKIP and exits 0 (.ci/run installs both), so a machine without a JDK
// can still build and test the TypeScript packages. Either way it first checks that the Maven version
// of every Kotlin artifact is @pheby/protocol's package.json version: the two are released together.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const [task, module, ...extra] = process.argv.slice(2);
const goals = { build: ["install", "-Dmaven.test.skip=true"], test: ["verify"] }[task];
if (!goals || !module) {
  process.stderr.write("usage: node scripts/maven.mjs build|test <module> [mvn args…]\n");
  process.exit(2);
}

const protocolVersion = JSON.parse(
  readFileSync(join(root, "packages/protocol/package.json"), "utf8"),
).version;
const parentVersion = (pom) =>
  /<artifactId>pheby-kotlin-parent<\/artifactId>\s*<version>([^<]+)<\/version>/.exec(pom)?.[1];
const stale = ["pom.xml", "packages/protocol-kotlin/pom.xml", "packages/client-kotlin/pom.xml"].filter(
  (file) => parentVersion(readFileSync(join(root, file), "utf8")) !== protocolVersion,
);
if (stale.length > 0) {
  process.stderr.write(
    `maven: the Kotlin artifacts must have @pheby/protocol's version ${protocolVersion}; set it as the ` +
      `pheby-kotlin-parent version in ${stale.join(", ")}\n`,
  );
  process.exit(1);
}

const has = (command) => spawnSync(command, ["-version"], { stdio: "ignore" }).error === undefined;
if (!has("mvn") || !has("java")) {
  process.stdout.write(
    `SKIP: ${module}: Kotlin builds and tests need mvn and java (install maven and openjdk-17-jdk-headless)\n`,
  );
  process.exit(0);
}

const reports = ["surefire-reports", "failsafe-reports"].map((dir) => join(root, module, "target", dir));
for (const dir of reports) rmSync(dir, { recursive: true, force: true });
const started = Date.now();
// -q keeps logs short (failures are still printed); the test summary is read from the reports below.
const mvn = spawnSync("mvn", ["-q", "-B", "-f", join(root, "pom.xml"), "-pl", module, ...extra, ...goals], {
  stdio: "inherit",
});
const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (task === "test") {
  for (const dir of reports) {
    let files = [];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith(".txt"));
    } catch {
      continue;
    }
    const totals = [0, 0, 0, 0];
    for (const file of files) {
      const line = /Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)/.exec(
        readFileSync(join(dir, file), "utf8"),
      );
      if (line) for (let i = 0; i < 4; i++) totals[i] += Number(line[i + 1]);
    }
    const [run, failures, errors, skipped] = totals;
    process.stdout.write(
      `${module} (${dir.endsWith("failsafe-reports") ? "integration" : "unit"}): Tests run: ${run}, Failures: ${failures}, Errors: ${errors}, Skipped: ${skipped}\n`,
    );
  }
}
process.stdout.write(`${module}: mvn ${goals[0]} ${mvn.status === 0 ? "ok" : "FAILED"} in ${seconds} s\n`);
process.exit(mvn.status ?? 1);
