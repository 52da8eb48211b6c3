// The three engines behind one small interface, so one scenario set (pages/scenarios.js) runs
// in all of them: Chromium through Playwright (the rest of the suite's driver), Firefox ESR
// through geckodriver and WebKitGTK — Safari's engine — through WebKitWebDriver, both over
// plain W3C WebDriver with the Selenium project's bindings (selenium-webdriver: four small
// dependencies; WebdriverIO's client pulls driver downloaders we cannot use here). Playwright
// cannot drive these system browsers (it would need its own browser builds).
//
// Each driver process is started here on an ephemeral loopback port and stopped by its PID (the
// WebKit one with its Xvfb, as one process group). Selenium Manager is never involved: the
// bindings only talk to the driver URL they are given.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Builder } from 'selenium-webdriver';

const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/** geckodriver from `cargo install` (scripts/setup.sh): on PATH, or in ~/.cargo/bin. */
function geckodriver() {
  if (process.env.GECKODRIVER) return process.env.GECKODRIVER;
  try {
    return execFileSync('sh', ['-c', 'command -v geckodriver'], { encoding: 'utf8' }).trim();
  } catch {
    return path.join(os.homedir(), '.cargo/bin/geckodriver');
  }
}

export const WEBDRIVER_ENGINES = {
  firefox: {
    command: () => [geckodriver(), ['--host=127.0.0.1']],
    port: (p) => `--port=${p}`,
    capabilities: {
      browserName: 'firefox',
      'moz:firefoxOptions': {
        binary: '/usr/bin/firefox-esr',
        args: ['-headless'],
        // A test machine has no network but loopback: no update, telemetry or remote-settings
        // traffic competing with the measured streams.
        prefs: { 'app.update.enabled': false, 'datareporting.policy.dataSubmissionEnabled': false, 'services.settings.server': 'http://127.0.0.1:9/' },
      },
    },
  },
  webkit: {
    // MiniBrowser has no headless mode: a virtual X server (xvfb-run -a picks a free display).
    command: () => ['xvfb-run', ['-a', '/usr/bin/WebKitWebDriver']],
    port: (p) => `--port=${p}`,
    capabilities: {
      browserName: 'MiniBrowser',
      'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
    },
  },
};

/** What each engine needs on this machine (scripts/setup.sh installs it). */
export function missing(engine) {
  const need = engine === 'firefox' ? ['/usr/bin/firefox-esr', geckodriver()] : engine === 'webkit' ? ['/usr/bin/WebKitWebDriver', MINIBROWSER, '/usr/bin/xvfb-run'] : [];
  return need.filter((f) => !fs.existsSync(f));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitReady(url, child, ms = 15_000) {
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`driver exited (${child.exitCode}): ${child.__log}`);
    try {
      const r = await fetch(`${url}/status`);
      if (r.ok && (await r.json()).value.ready) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() - t0 > ms) throw new Error(`driver not ready within ${ms} ms: ${child.__log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts the engine's driver and one browser session. Returns the interface the engine spec
 * uses: goto(url), scenario(name, arg) → JSON result, evaluate(js) for a page expression,
 * click(css), quit().
 */
export async function openWebDriver(engine) {
  const e = WEBDRIVER_ENGINES[engine];
  const [cmd, args] = e.command();
  const port = await freePort();
  // Own process group: WebKitWebDriver runs under xvfb-run with an Xvfb beside it; the group's
  // id is this child's PID, so stopping it ends exactly what was started here.
  const child = spawn(cmd, [...args, e.port(port)], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.__log = '';
  const keep = (d) => {
    child.__log = (child.__log + d).slice(-4000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const stop = () =>
    new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        done();
      }
      setTimeout(() => {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 5000).unref();
    });
  const url = `http://127.0.0.1:${port}`;
  let driver;
  try {
    await waitReady(url, child);
    driver = await new Builder().usingServer(url).withCapabilities(e.capabilities).build();
    await driver.manage().setTimeouts({ script: 120_000, pageLoad: 30_000 });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    engine,
    goto: (u) => driver.get(u),
    evaluate: (js) => driver.executeScript(`return (${js});`),
    async scenario(name, arg) {
      const r = await driver.executeAsyncScript(
        `const done = arguments[arguments.length - 1];
         window.__scenario(arguments[0], arguments[1]).then((json) => done({ json }), (e) => done({ error: String(e && e.stack || e) }));`,
        name,
        arg ?? null,
      );
      if (r.error) throw new Error(`${engine}: scenario ${name} failed in the page: ${r.error}`);
      return JSON.parse(r.json);
    },
    async waitFor(js, ms = 30_000) {
      const t0 = Date.now();
      for (;;) {
        const v = await driver.executeScript(`return (${js});`);
        if (v) return v;
        if (Date.now() - t0 > ms) throw new Error(`${engine}: timed out waiting for ${js}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async click(css) {
      const { By } = await import('selenium-webdriver');
      await (await driver.findElement(By.css(css))).click();
    },
    /** Types `text` into the element and presses Enter, as a person would. */
    async type(css, text) {
      const { By, Key } = await import('selenium-webdriver');
      await (await driver.findElement(By.css(css))).sendKeys(text, Key.ENTER);
    },
    async quit() {
      try {
        await driver.quit();
      } finally {
        await stop();
      }
    },
  };
}

/** The same interface over a Playwright page (Chromium). */
export function playwrightEngine(page) {
  return {
    engine: 'chromium',
    goto: (u) => page.goto(u),
    evaluate: (js) => page.evaluate(js),
    async scenario(name, arg) {
      return JSON.parse(await page.evaluate(([n, a]) => window.__scenario(n, a), [name, arg ?? null]));
    },
    async waitFor(js, ms = 30_000) {
      return (await page.waitForFunction(js, null, { timeout: ms })).jsonValue();
    },
    click: (css) => page.click(css),
    async type(css, text) {
      await page.fill(css, text);
      await page.press(css, 'Enter');
    },
    quit: () => page.close(),
  };
}
