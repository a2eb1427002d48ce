import { defineConfig } from "vitest/config";

// The suite talks to a real server child process; one file at a time keeps the
// shared 2-core machines calm and the server's lockout accounting predictable.
export default defineConfig({
  test: { include: ["test/**/*.test.ts"], testTimeout: 120_000, hookTimeout: 60_000, fileParallelism: false },
});
