// One scripted server for the whole run, with a real nginx in front of its first origin (the
// upstream-buffering tests); its origins reach the test workers via env. The React
// chat of the auto-mode scenarios is bundled first (real react-dom, esbuild), into the pages
// directory the server serves.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { startServer, NGINX_LOCATIONS } from './server.js';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

export default async function globalSetup() {
  await build({
    entryPoints: [here('react-app/chat.js')],
    bundle: true,
    format: 'esm',
    outfile: here('pages/react-app/chat.js'),
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'warning',
  });
  const server = await startServer({ listeners: 2, nginx: NGINX_LOCATIONS });
  process.env.RUM_ORIGIN = server.origins[0];
  process.env.RUM_OTHER_ORIGIN = server.origins[1];
  process.env.RUM_NGINX_ORIGIN = server.nginx;
  return async () => {
    await server.stop();
  };
}
