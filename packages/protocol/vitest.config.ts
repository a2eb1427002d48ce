import { defineConfig } from "vitest/config";

// The package tests spawn node and tsc against dist/: generous timeouts, since CI machines are shared.
export default defineConfig({ test: { include: ["test/**/*.test.ts"], testTimeout: 60_000 } });
