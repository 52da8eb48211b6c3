// End-to-end tests in the system Chromium (never a downloaded browser). One worker: the
// tests compare timings against the scripted server's recorded send times, and this machine
// has two cores.
import { defineConfig } from '@playwright/test';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export default defineConfig({
  testDir: 'tests/e2e',
  testMatch: /.*\.spec\.js$/,
  workers: 1,
  fullyParallel: false,
  retries: 0,
  timeout: 60_000,
  // Its own output folder: Playwright empties outputDir at start, and scripts/test.sh keeps
  // the other layers' logs in test-results/.
  outputDir: 'test-results/playwright',
  reporter: [['list'], ['json', { outputFile: 'test-results/e2e.json' }]],
  globalSetup: './tests/e2e/global-setup.js',
  use: {
    browserName: 'chromium',
    launchOptions: { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS },
  },
});
