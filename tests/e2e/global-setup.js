// One scripted server for the whole run; its origins reach the test workers via env.
import { startServer } from './server.js';

export default async function globalSetup() {
  const server = await startServer({ listeners: 2 });
  process.env.RUM_ORIGIN = server.origins[0];
  process.env.RUM_OTHER_ORIGIN = server.origins[1];
  return async () => {
    await server.stop();
  };
}
