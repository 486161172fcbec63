import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The gateway serves the built files at /console (services/gateway/src/console/); `npm run dev -w
// @keel/console` proxies the API to a gateway on :8080 for working on the pages.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/v1': 'http://127.0.0.1:8080' } },
});
