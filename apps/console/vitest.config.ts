import { defineConfig } from "vitest/config";

// The Chromium suite shares one browser and one server: run files one at a time.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
