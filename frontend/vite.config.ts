// Vite builds the console into dist/, which Django serves (platform/sampan/console.py).
// `npm run dev` serves it on :5173 and proxies the API and websockets to a running `make run`.
import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

const platform = process.env.SAMPAN_URL ?? "http://127.0.0.1:8000";

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
  },
  server: {
    proxy: {
      // Django's CSRF check compares Origin with the host it serves: present the platform's own.
      "/api": {
        target: platform,
        changeOrigin: true,
        configure: (proxy) => proxy.on("proxyReq", (req) => req.setHeader("origin", platform)),
      },
      "/ws": { target: platform.replace(/^http/, "ws"), ws: true, changeOrigin: true },
    },
  },
  test: {
    environment: "jsdom",
    globals: true,
    setupFiles: ["src/test/setup.ts"],
    css: false,
    // antd in jsdom is slow (a modal or a select renders in seconds on a loaded 2-core machine);
    // 5 s timed out page tests while other work ran, and 20 s the training page's budget test
    // on a 2-core machine about 3x slower than usual (the whole suite took 14 min there)
    testTimeout: 60_000,
  },
});
