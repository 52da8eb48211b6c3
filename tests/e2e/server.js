// Starts the scripted LLM server (demo/, the one server for tests, benchmarks and the demo)
// on ephemeral loopback ports and returns its origins. Stopped by PID only.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The nginx in front of the scripted server (tests/e2e/engines.spec.js): the configurations
 * that decide how a stream reaches the page. `/` is nginx's default (`proxy_buffering on`; an
 * upstream's `X-Accel-Buffering: no` turns it off per response); `/buffers-4k/` names the
 * 4 KB buffers explicitly (the default on 4 KB-page machines); `/gzip/` compresses event
 * streams. Every path is the scripted server's own below the prefix.
 */
export const NGINX_LOCATIONS = [
  'location / { proxy_pass http://UPSTREAM; }',
  'location /buffers-4k/ { proxy_buffer_size 4k; proxy_buffers 8 4k; proxy_pass http://UPSTREAM/; }',
  'location /gzip/ { gzip on; gzip_types text/event-stream; proxy_pass http://UPSTREAM/; }',
].join('\n');

/**
 * Starts `llm-rum-demo` with `listeners` loopback ports; resolves { origins, pid, stop }, and
 * with `nginx` (a `server {}` block body, demo/src/nginx.rs) a real nginx in front of the first
 * port, started and stopped by the server: its origin is `nginx`.
 */
export function startServer({ listeners = 2, extraArgs = [], nginx = null } = {}) {
  const args = [];
  for (let i = 0; i < listeners; i++) args.push('--listen', '127.0.0.1:0');
  args.push('--static', `/dist=${path.join(root, 'dist')}`, '--static', `/demo=${path.join(root, 'demo/page')}`, '--static', `/=${path.join(root, 'tests/e2e/pages')}`, ...extraArgs);
  if (nginx) args.push('--nginx', nginx);
  return startBinary('llm-rum-demo', args, listeners, !!nginx);
}

/** Starts the collector (`--listen` defaults to an ephemeral port); resolves like startServer. */
export function startCollector(args) {
  return startBinary('llm-rum-collector', args.includes('--listen') ? args : ['--listen', '127.0.0.1:0', ...args], 1);
}

/** Spawns target/release/NAME and waits for `listeners` "listening on" lines (and "nginx on"). */
function startBinary(name, args, listeners, nginx = false) {
  const bin = path.join(root, 'target/release', name);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const origins = [];
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within 10 s`));
    }, 10_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.stdout.on('data', (d) => {
      buf += d;
      let m;
      const re = /listening on (http:\/\/127\.0\.0\.1:\d+)/g;
      while ((m = re.exec(buf))) if (!origins.includes(m[1])) origins.push(m[1]);
      const front = (/nginx on (http:\/\/127\.0\.0\.1:\d+)/.exec(buf) || [])[1];
      if (origins.length >= listeners && (!nginx || front)) {
        clearTimeout(timer);
        resolve({
          origins,
          nginx: front || null,
          pid: child.pid,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', done);
              process.kill(child.pid, 'SIGTERM');
            }),
        });
      }
    });
  });
}
