import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

/**
 * The web console's build. Everything lives under /console/ on the service's own origin (assets in
 * /console/assets/ with content hashes; the service serves index.html at / and at every client
 * route). CONSOLE_OUT_DIR lets ops/console/buildConsole.ts build into a fresh folder and swap it in.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: process.env.CONSOLE_OUT_DIR ?? fileURLToPath(new URL('../dist', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // One file per lazily loaded feature (the code editor): the first load carries none of them.
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
