// Builds the dashboard into web/dist (served by the service at `/`): one hashed bundle, no CDN.
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    chunkSizeWarningLimit: 1200,
    // Quiet builds in setup: the bundler's own timing report is for profiling.
    rolldownOptions: { checks: { pluginTimings: false } },
  },
});
