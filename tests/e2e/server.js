// Starts the scripted LLM server (demo/, the one server for tests, benchmarks and the demo)
// on ephemeral loopback ports and returns its origins. Stopped by PID only.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Starts `llm-rum-demo` with `listeners` loopback ports; resolves { origins, pid, stop }. */
export function startServer({ listeners = 2, extraArgs = [] } = {}) {
  const args = [];
  for (let i = 0; i < listeners; i++) args.push('--listen', '127.0.0.1:0');
  args.push('--static', `/dist=${path.join(root, 'dist')}`, '--static', `/demo=${path.join(root, 'demo/page')}`, '--static', `/=${path.join(root, 'tests/e2e/pages')}`, ...extraArgs);
  return startBinary('llm-rum-demo', args, listeners);
}

/** Starts the collector (`--listen` defaults to an ephemeral port); resolves like startServer. */
export function startCollector(args) {
  return startBinary('llm-rum-collector', args.includes('--listen') ? args : ['--listen', '127.0.0.1:0', ...args], 1);
}

/** Spawns target/release/NAME and waits for `listeners` "listening on" lines. */
function startBinary(name, args, listeners) {
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
      if (origins.length >= listeners) {
        clearTimeout(timer);
        resolve({
          origins,
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
