import { defineConfig } from "vite";

// `base: "./"` makes every asset URL relative, so the same build works at
// /console/ on pheby-server and at any path of any static host.
export default defineConfig({
  base: "./",
  build: {
    target: "es2022",
    outDir: "dist",
    emptyOutDir: true,
    // No inline <script>/<style> and no data: URLs, so a strict CSP holds.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
