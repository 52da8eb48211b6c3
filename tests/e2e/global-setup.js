// One scripted server for the whole run, with a real nginx in front of its first origin (the
// upstream-buffering tests); the origins reach the test workers via env.
import { startServer, NGINX_LOCATIONS } from './server.js';

export default async function globalSetup() {
  const server = await startServer({ listeners: 2, nginx: NGINX_LOCATIONS });
  process.env.RUM_ORIGIN = server.origins[0];
  process.env.RUM_OTHER_ORIGIN = server.origins[1];
  process.env.RUM_NGINX_ORIGIN = server.nginx;
  return async () => {
    await server.stop();
  };
}
