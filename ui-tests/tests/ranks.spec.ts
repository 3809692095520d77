/**
 * A multi-rank profile in the session panel: `%%nsight --ranks 2` run in a real
 * kernel (two gloo ranks on the cpu backend here; NSIGHT_LAB_RANKS_BACKEND=events on
 * a machine with two GPUs: NCCL), opened from the history, with its per-rank chart
 * drawn (each rank's duration per run, the straggler starred) under its title.
 * The chart's screenshot goes to results/ with NSIGHT_LAB_UPDATE_RESULTS=1.
 *
 * NSIGHT_LAB_RANKS_SESSION=NAME opens a session already in the server's store
 * (NSIGHT_LAB_HOME) instead of profiling one: a store brought back from a GPU
 * machine (benchmarks/multigpu_h200.py --store DIR) is drawn here.
 */

import { IJupyterLabPageFixture, expect, test } from '@jupyterlab/galata';

import { LIST, openSidebar, runCode, shot } from './nsightLab';

const MAIN = '#jp-main-dock-panel';
const SESSION_PANEL = `${MAIN} .jp-nsightLab-SelectionPanel[data-kind="session"]`;
const ROW = '.jp-nsightLab-SessionList-row';
const BACKEND = process.env.NSIGHT_LAB_RANKS_BACKEND ?? 'cpu';
const STORED = process.env.NSIGHT_LAB_RANKS_SESSION ?? '';

// No session mock: galata's would also catch nsight-lab's own /api/sessions.
test.use({ autoGoto: true, sessions: null });

test('a multi-rank session shows duration per rank per run, the straggler starred', async ({
  page
}) => {
  test.setTimeout(300000);
  const name = STORED || `ranks-${BACKEND}`;
  if (!STORED) {
    await profile(page);
  }

  await openSidebar(page);
  await page
    .locator(LIST)
    .locator(ROW, { hasText: name })
    .click({ timeout: 60000 });
  const panel = page.locator(SESSION_PANEL);
  await expect(panel).toBeVisible({ timeout: 30000 });
  await page.sidebar.close('left');
  const chart = panel.locator(
    '.jp-nsightLab-ChartView[data-chart="ranks"][data-state="drawn"]'
  );
  await expect(chart.locator('.main-svg').first()).toBeVisible({
    timeout: 30000
  });
  await expect(chart.locator('.jp-nsightLab-ChartView-title')).toHaveText(
    'Duration per rank per run'
  );
  await expect(
    chart.locator('.legendtext', { hasText: 'straggler' }).first()
  ).toBeVisible();
  if (!STORED) {
    // Rank 1 sleeps longer in "uneven": its stragglers are in the legend.
    await expect(
      chart.locator('.legendtext', { hasText: 'uneven rank 1' })
    ).toHaveCount(1);
  }
  await chart.scrollIntoViewIfNeeded();
  const file = STORED ? name.replace(/[^A-Za-z0-9_.-]+/g, '_') : BACKEND;
  await chart.screenshot({ path: shot(`ranks_session_panel_${file}.png`) });
  if (
    await panel
      .locator('[data-chart="rank_clocks"][data-state="drawn"]')
      .count()
  ) {
    await panel
      .locator('.jp-nsightLab-ChartView[data-chart="rank_clocks"]')
      .screenshot({ path: shot(`ranks_clocks_panel_${file}.png`) });
  }
});

/** Profile the two-region cell in ranks, in a new notebook. */
async function profile(page: IJupyterLabPageFixture): Promise<void> {
  await page.notebook.createNew('ranks.ipynb');
  await runCode(page, 0, '%load_ext nsight_lab');
  const cell = [
    `%%nsight --backend ${BACKEND} --ranks 2 --runs 8 --warmup 1 --name ranks-${BACKEND}`,
    'import time, torch, torch.distributed as dist, nsight',
    `device = f"cuda:{dist.get_rank()}" if "${BACKEND}" == "events" else "cpu"`,
    'x = torch.ones(4 * 1024 * 1024, device=device)',
    // One-line blocks: the editor would indent the line after a colon.
    'with nsight.annotate("all_reduce"): dist.all_reduce(x)',
    'with nsight.annotate("uneven"): time.sleep(0.02 if dist.get_rank() == 1 else 0.004)'
  ].join('\n');
  await runCode(page, 1, cell);
}
