import { resolve } from 'node:path';
import { defineConfig } from 'vite';

const here = import.meta.dirname;
/** Where `npx vite --config apps/dashboard/vite.config.ts` (the dev server) sends `/api`. */
const apiTarget = process.env['POLICYGEN_API_URL'] ?? 'http://localhost:3000';

/**
 * The dashboard: a static single-page app. tools/build/bundle-cli.mjs builds it with this config
 * into dist/dashboard; `base: './'` makes every asset URL relative, so it works under any mount path.
 */
export default defineConfig({
  root: here,
  base: './',
  publicDir: false,
  build: {
    outDir: resolve(here, '../../dist/dashboard'),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: true,
    reportCompressedSize: false,
  },
  server: { proxy: { '/api': { target: apiTarget, changeOrigin: true } } },
  preview: { proxy: { '/api': { target: apiTarget, changeOrigin: true } } },
});
