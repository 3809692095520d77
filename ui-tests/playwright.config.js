/**
 * Configuration for Playwright using default from @jupyterlab/galata
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

module.exports = {
  ...baseConfig,
  use: {
    ...baseConfig.use,
    // The browser comes from Debian's chromium package: Playwright's own browser
    // downloads are not reachable here.
    launchOptions: {
      executablePath: '/usr/bin/chromium'
    },
    video: 'off'
  },
  webServer: {
    command: 'jlpm start',
    url: 'http://localhost:8888/lab',
    timeout: 120 * 1000,
    reuseExistingServer: !process.env.CI
  }
};
