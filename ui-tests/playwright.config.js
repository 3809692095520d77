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
 * - `readability` (tests/readability.spec.ts): a JupyterLab of its own whose store
 *   is a copy of the H200 fixture (tests/fixtures/h200_block.sqlite, `jlpm
 *   start:fixture`); every chart of its six sessions read in light and dark, and
 *   (tests/compare-fixture.spec.ts) the same-code comparison and the history, and
 *   (tests/layout.spec.ts) the session panels' layout (answer first, empty charts
 *   folded, kernels, history rows whole), and (tests/findings.spec.ts) why it is
 *   slow: the findings of a session panel and of a cell's final output.
 * - `quickstart` (tests/quickstart.spec.ts): a JupyterLab of its own whose store holds
 *   the README's quickstart, recorded by the cpu backend when the server starts
 *   (`jlpm start:quickstart`, record_quickstart.py), its executed notebooks in the
 *   server's root: what a new user sees in the cell output and the session panels.
 * - `postgres` (tests/postgres.spec.ts): a JupyterLab of its own whose store is a
 *   throwaway PostgreSQL cluster (`jlpm start:postgres`: tests/_postgres.py starts
 *   it, runs the server with NSIGHT_LAB_STORE set, stops it on exit); runs written
 *   by a separate process reach its sidebar. Without PostgreSQL's binaries that
 *   server is not started and the spec skips with the reason (fails under CI).
 *
 * The scale benchmark (tests/scale.spec.ts) has its own config,
 * playwright.scale.config.js, and does not run here.
 *
 * NSIGHT_LAB_UI_PORT, NSIGHT_LAB_UI_COLAB_PORT, NSIGHT_LAB_UI_PG_PORT,
 * NSIGHT_LAB_UI_FIXTURE_PORT and NSIGHT_LAB_UI_QUICKSTART_PORT move them (default
 * 8888 and the next ports); scripts/test.sh sets them to free ports. With
 * `--project=NAME` only the servers of the named projects start.
 */
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const LAB_PORT = Number(process.env.NSIGHT_LAB_UI_PORT || 8888);
const COLAB_PORT = Number(process.env.NSIGHT_LAB_UI_COLAB_PORT || LAB_PORT + 1);
const PG_PORT = Number(process.env.NSIGHT_LAB_UI_PG_PORT || COLAB_PORT + 1);
const FIXTURE_PORT = Number(
  process.env.NSIGHT_LAB_UI_FIXTURE_PORT || PG_PORT + 1
);

const QUICKSTART_PORT = Number(
  process.env.NSIGHT_LAB_UI_QUICKSTART_PORT || FIXTURE_PORT + 1
);

const ROOT = path.resolve(__dirname, '..');
const VENV_PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
/** The Python that has nsight_lab (the spec runs its separate writer with it). */
process.env.NSIGHT_LAB_UI_PYTHON ||= fs.existsSync(VENV_PYTHON)
  ? VENV_PYTHON
  : 'python3';
/** Where the PostgreSQL server's store URL is written, for the spec's writer. */
process.env.NSIGHT_LAB_UI_PG_URL_FILE ||= path.join(
  os.tmpdir(),
  `nsight-lab-ui-pg-${PG_PORT}.url`
);

/**
 * Why no PostgreSQL cluster can be started here ('' when one can): the one check
 * tests/_postgres.py makes for pytest too. Read once, by the runner; its workers
 * inherit it.
 */
function postgresMissing() {
  try {
    return execFileSync(
      process.env.NSIGHT_LAB_UI_PYTHON,
      [
        '-c',
        "from tests import _postgres; print(_postgres.missing_reason() or '')"
      ],
      { cwd: ROOT, encoding: 'utf8' }
    ).trim();
  } catch (error) {
    return `cannot ask tests/_postgres.py: ${error.message.split('\n')[0]}`;
  }
}
if (process.env.NSIGHT_LAB_UI_PG_MISSING === undefined) {
  process.env.NSIGHT_LAB_UI_PG_MISSING = postgresMissing();
}

/** The projects named with --project (none: every project). */
const PROJECTS = process.argv
  .flatMap((arg, i, all) =>
    arg === '--project'
      ? [all[i + 1]]
      : arg.startsWith('--project=')
        ? [arg.slice('--project='.length)]
        : []
  )
  .filter(Boolean);

/** Whether a server of one of `projects` is needed by this run. */
function wanted(projects) {
  return PROJECTS.length === 0 || projects.some(p => PROJECTS.includes(p));
}

function server(script, port) {
  return {
    command: `jlpm ${script} --port=${port}`,
    url: `http://localhost:${port}/lab`,
    timeout: 120 * 1000,
    reuseExistingServer: !process.env.CI
  };
}

/**
 * The PostgreSQL server: SIGTERM (to its process group) lets tests/_postgres.py stop
 * the cluster, whose postmaster is outside that group (a SIGKILL would leave it).
 */
function postgresServer() {
  return {
    ...server('start:postgres', PG_PORT),
    gracefulShutdown: { signal: 'SIGTERM', timeout: 20 * 1000 }
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
    },
    {
      name: 'postgres',
      testMatch: 'postgres.spec.ts',
      use: { baseURL: `http://localhost:${PG_PORT}` }
    },
    {
      name: 'readability',
      testMatch: [
        'readability.spec.ts',
        'compare-fixture.spec.ts',
        'layout.spec.ts',
        'findings.spec.ts'
      ],
      use: { baseURL: `http://localhost:${FIXTURE_PORT}` }
    },
    {
      name: 'quickstart',
      testMatch: 'quickstart.spec.ts',
      use: { baseURL: `http://localhost:${QUICKSTART_PORT}` }
    }
  ],
  webServer: [
    wanted(['sidebar', 'reopen', 'ranks']) && server('start', LAB_PORT),
    wanted(['widget-colab']) && server('start:colab', COLAB_PORT),
    wanted(['readability']) && server('start:fixture', FIXTURE_PORT),
    wanted(['quickstart']) && server('start:quickstart', QUICKSTART_PORT),
    wanted(['postgres']) &&
      !process.env.NSIGHT_LAB_UI_PG_MISSING &&
      postgresServer()
  ].filter(Boolean)
};
