import { defineConfig } from "vitest/config";

// The reliability suite, proof that the server holds up against hostile input, crashes and load: the built
// dist/main.js as a child process under fuzzing, SIGKILLs, slow readers, a soak, brute force and a real Caddy
// TLS front. Files run one at a time so their timing and memory figures do not disturb each other on a 2-core
// CI machine.
export default defineConfig({
  test: {
    include: ["reliability/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
