/**
 * Configuration for Playwright using default from @jupyterlab/galata.
 *
 * Two JupyterLab servers:
 * - `sidebar` (tests/sidebar.spec.ts): JupyterLab with the nsight-lab lab extension.
 * - `reopen` (tests/reopen.spec.ts): the same server; a saved %%nsight output
 *   reopened with no kernel, drawn by the extension's mime renderer.
 * - `ranks` (tests/ranks.spec.ts): the same server; a %%nsight --ranks 2 session
 *   and its per-rank chart.
 * - `widget-colab` (tests/magic-widget.spec.ts): the nsight-lab lab extension
 *   disabled, as on Colab (JUPYTER_CONFIG_DIR=colab-config, whose
 *   labconfig/page_config.json disables it); the inline anywidget only.
 *
 * The scale benchmark (tests/scale.spec.ts) has its own config,
 * playwright.scale.config.js, and does not run here.
 *
 * NSIGHT_LAB_UI_PORT and NSIGHT_LAB_UI_COLAB_PORT move them (default 8888 and the
 * next port); scripts/test.sh sets both to ports that are free.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const LAB_PORT = Number(process.env.NSIGHT_LAB_UI_PORT || 8888);
const COLAB_PORT = Number(process.env.NSIGHT_LAB_UI_COLAB_PORT || LAB_PORT + 1);

function server(script, port) {
  return {
    command: `jlpm ${script} --port=${port}`,
    url: `http://localhost:${port}/lab`,
    timeout: 120 * 1000,
    reuseExistingServer: !process.env.CI
  };
}

module.exports = {
  ...baseConfig,
  testIgnore: ['**/scale.spec.ts'],
  use: {
    ...baseConfig.use,
    // The browser comes from Debian's chromium package: Playwright's own browser
    // downloads are not reachable here.
    launchOptions: {
      executablePath: '/usr/bin/chromium'
    },
    video: 'off'
  },
  projects: [
    {
      name: 'sidebar',
      testMatch: 'sidebar.spec.ts',
      use: { baseURL: `http://localhost:${LAB_PORT}` }
    },
    {
      name: 'reopen',
      testMatch: 'reopen.spec.ts',
      use: { baseURL: `http://localhost:${LAB_PORT}` }
    },
    {
      name: 'ranks',
      testMatch: 'ranks.spec.ts',
      use: { baseURL: `http://localhost:${LAB_PORT}` }
    },
    {
      name: 'widget-colab',
      testMatch: 'magic-widget.spec.ts',
      use: { baseURL: `http://localhost:${COLAB_PORT}` }
    }
  ],
  webServer: [server('start', LAB_PORT), server('start:colab', COLAB_PORT)]
};
