/**
 * Playwright config of the sidebar scale benchmark (tests/scale.spec.ts) only; CI's
 * ui-test step (playwright.config.js) ignores that spec. Run through
 * benchmarks/ui_scale.py, which builds the store and sets NSIGHT_LAB_HOME (the
 * server reads the store there) and NSIGHT_LAB_SCALE_PORT (default 8898).
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const PORT = Number(process.env.NSIGHT_LAB_SCALE_PORT || 8898);

module.exports = {
  ...baseConfig,
  testMatch: '**/scale.spec.ts',
  timeout: 300 * 1000,
  workers: 1,
  use: {
    ...baseConfig.use,
    baseURL: `http://localhost:${PORT}`,
    launchOptions: {
      executablePath: '/usr/bin/chromium'
    },
    video: 'off',
    trace: 'off'
  },
  webServer: {
    command: `jlpm start --port=${PORT}`,
    url: `http://localhost:${PORT}/lab`,
    timeout: 120 * 1000,
    reuseExistingServer: false
  }
};
