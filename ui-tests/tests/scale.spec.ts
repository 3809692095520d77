/**
 * The sidebar against a large store (benchmarks/ui_scale.py builds it: 10,000
 * sessions, 1,000,000 runs, and runs this spec with playwright.scale.config.js).
 *
 * Measures in the page (performance.now()):
 * - open: from `nsight-lab:open-sidebar` to the first page of sessions listed (rows
 *   rendered with their sessions, `data-loaded` > 0), once per fresh page;
 * - select: from a click on a session row to the SelectionView of the main-area
 *   panel in front showing that session (`data-state="session"`) with its four
 *   charts (CHARTS) drawn (`data-state="drawn"` and plotly's svg), for several
 *   sessions. The grid also holds a box for each chart the session lacks (ranks,
 *   counters…: `data-state="missing"`, a line of text), so the four are named, not
 *   counted.
 * Each with the Resource Timing of the REST calls made meanwhile, so the server's
 * share (request start to response end) can be told from rendering.
 * Writes ui-tests/results/ui_scale_raw.json; ui_scale.py summarises it.
 */

import { expect, test } from '@jupyterlab/galata';

import { LIST, LIVE, SELECTION, writeResult } from './nsightLab';

test.describe.configure({ mode: 'serial' });
test.use({ autoGoto: true, sessions: null });

const REPEATS = Number(process.env.NSIGHT_LAB_SCALE_REPEATS || 7);
/** The charts a session of the scale store has (a cpu template with clocks). */
const CHARTS = ['duration', 'clocks', 'roofline', 'traffic'];

interface IRest {
  url: string;
  startMs: number;
  requestToResponseEndMs: number;
  waitingMs: number;
  durationMs: number;
}

interface IMeasure {
  ms: number;
  rest: IRest[];
  total?: string;
  loaded?: string;
  sessionId?: string;
}

const openMs: IMeasure[] = [];
const selectMs: IMeasure[] = [];
const responses: { url: string; status: number; timing: unknown }[] = [];

test.afterAll(() => {
  if (process.env.NSIGHT_LAB_SCALE_STREAM) {
    return; // the stream run writes ui_stream_raw.json
  }
  writeResult('ui_scale_raw.json', {
    open_to_list_ms: openMs.map(m => m.ms),
    select_to_charts_ms: selectMs.map(m => m.ms),
    list_rest_ms: openMs.map(m => m.rest),
    select_rest_ms: selectMs.map(m => m.rest),
    open: openMs,
    select: selectMs,
    responses
  });
});

for (let i = 0; i < (process.env.NSIGHT_LAB_SCALE_STREAM ? 0 : REPEATS); i++) {
  test(`open the sidebar to the first page of sessions (#${i + 1})`, async ({
    page
  }) => {
    page.on('response', async r => {
      if (r.url().includes('/nsight-lab/api/')) {
        responses.push({
          url: r.url(),
          status: r.status(),
          timing: r.request().timing()
        });
      }
    });
    const measure = await page.evaluate(async list => {
      performance.clearResourceTimings();
      const t0 = performance.now();
      void window.jupyterapp.commands.execute('nsight-lab:open-sidebar');
      const done = (): boolean => {
        const node = document.querySelector(list) as HTMLElement | null;
        return (
          !!node &&
          Number(node.dataset.loaded ?? 0) > 0 &&
          node.querySelectorAll('.jp-nsightLab-SessionList-row').length > 0 &&
          node.offsetParent !== null
        );
      };
      await new Promise<void>(resolve => {
        const poll = (): void =>
          done() ? resolve() : void requestAnimationFrame(poll);
        poll();
      });
      const ms = performance.now() - t0;
      const node = document.querySelector(list) as HTMLElement;
      const rest = (
        performance.getEntriesByType('resource') as PerformanceResourceTiming[]
      )
        .filter(e => e.name.includes('/nsight-lab/api/'))
        .map(e => ({
          url: e.name,
          startMs: e.startTime - t0,
          requestToResponseEndMs: e.responseEnd - e.requestStart,
          waitingMs: e.responseStart - e.requestStart,
          durationMs: e.duration
        }));
      return {
        ms,
        rest,
        total: node.dataset.total,
        loaded: node.dataset.loaded
      };
    }, LIST);
    expect(Number(measure.total)).toBeGreaterThan(0);
    openMs.push(measure);
  });
}

test('select a session to its four charts drawn', async ({ page }) => {
  test.skip(
    !!process.env.NSIGHT_LAB_SCALE_STREAM,
    'the stream run measures frames'
  );
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('nsight-lab:open-sidebar');
  });
  const rows = page.locator(`${LIST} .jp-nsightLab-SessionList-row`);
  await expect(rows.first()).toBeVisible({ timeout: 60000 });
  for (let i = 0; i < REPEATS + 1; i++) {
    const measure = await page.evaluate(
      async ({ list, selection, index, charts }) => {
        const row = document.querySelectorAll(
          `${list} .jp-nsightLab-SessionList-row`
        )[index] as HTMLElement;
        performance.clearResourceTimings();
        const t0 = performance.now();
        row.click();
        const done = (): string | null => {
          const node = document.querySelector(selection) as HTMLElement | null;
          const view = node?.querySelector(
            '.jp-nsightLab-SessionView'
          ) as HTMLElement | null;
          if (!node || node.dataset.state !== 'session' || !view) {
            return null;
          }
          if (!row.classList.contains('jp-mod-selected')) {
            return null;
          }
          const drawn = charts.every(
            chart =>
              view.querySelector(
                `.jp-nsightLab-ChartView[data-chart="${chart}"][data-state="drawn"] .main-svg`
              ) !== null
          );
          return drawn ? (view.dataset.sessionId ?? '') : null;
        };
        let previous = (
          document.querySelector(
            `${selection} .jp-nsightLab-SessionView`
          ) as HTMLElement | null
        )?.dataset.sessionId;
        const sessionId = await new Promise<string>(resolve => {
          const poll = (): void => {
            const id = done();
            if (id !== null && id !== previous) {
              resolve(id);
            } else {
              requestAnimationFrame(poll);
            }
          };
          poll();
        });
        previous = sessionId;
        const ms = performance.now() - t0;
        const rest = (
          performance.getEntriesByType(
            'resource'
          ) as PerformanceResourceTiming[]
        )
          .filter(e => e.name.includes('/nsight-lab/api/'))
          .map(e => ({
            url: e.name,
            startMs: e.startTime - t0,
            requestToResponseEndMs: e.responseEnd - e.requestStart,
            waitingMs: e.responseStart - e.requestStart,
            durationMs: e.duration
          }));
        return { ms, rest, sessionId };
      },
      { list: LIST, selection: SELECTION, index: i, charts: CHARTS }
    );
    // The first click also loads plotly and builds the chart widgets: kept apart.
    if (i === 0) {
      writeResult('ui_scale_first_select.json', measure);
    } else {
      selectMs.push(measure);
    }
  }
  expect(selectMs.length).toBeGreaterThanOrEqual(5);
});

/**
 * The live view while a session streams (issue 32): run by `benchmarks/ui_scale.py
 * --stream`, which sets NSIGHT_LAB_SCALE_STREAM to a folder and, once this test
 * writes `ready` there, streams a session into the server's store (`--rate` runs/s)
 * beside `--http-panels` other panels reading it over REST, and writes `done` when
 * the session ended. Here: the sidebar's live view and the session's own panel are
 * open; every frame's time is recorded (requestAnimationFrame intervals, and the
 * Long Animation Frames the page reports) from the first run shown to `done`.
 * Writes ui-tests/results/ui_stream_raw.json. Skipped without the variable.
 */
const STREAM = process.env.NSIGHT_LAB_SCALE_STREAM ?? '';

test('the live view while a session streams: frame times', async ({ page }) => {
  test.skip(!STREAM, 'run by benchmarks/ui_scale.py --stream');
  test.setTimeout(1800 * 1000);
  const fs = await import('fs');
  const path = await import('path');
  const waitFile = async (name: string, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!fs.existsSync(path.join(STREAM, name))) {
      if (Date.now() > deadline) {
        throw new Error(`no ${name} in ${STREAM} within ${timeoutMs} ms`);
      }
      await new Promise(resolve => setTimeout(resolve, 100));
    }
  };
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('nsight-lab:open-sidebar');
  });
  await page.locator(LIVE).waitFor({ state: 'attached', timeout: 60000 });
  fs.writeFileSync(path.join(STREAM, 'ready'), `${Date.now()}\n`);
  // The streamed session shows in the live view (the server pushes it).
  const live = page.locator(`${LIVE}[data-status="running"]`);
  await live.waitFor({ state: 'attached', timeout: 300000 });
  const sessionId = Number(await live.getAttribute('data-session-id'));
  // With NSIGHT_LAB_SCALE_STREAM_PANEL=1, the session's own panel is open too (its
  // run table reads every new run).
  const withPanel = process.env.NSIGHT_LAB_SCALE_STREAM_PANEL === '1';
  if (withPanel) {
    await page.evaluate(async id => {
      await window.jupyterapp.commands.execute('nsight-lab:open-session', {
        id
      });
    }, sessionId);
    await page
      .locator(`${SELECTION}[data-state="session"]`)
      .waitFor({ state: 'attached', timeout: 120000 });
  }
  // Both views' charts drawn once (plotly loaded, the boxes laid out): what is
  // timed is the stream's updates, not the first draw.
  for (const view of withPanel ? [LIVE, SELECTION] : [LIVE]) {
    await page
      .locator(`${view} [data-chart="duration"][data-state="drawn"] .main-svg`)
      .first()
      .waitFor({ state: 'attached', timeout: 120000 });
  }
  await page.waitForTimeout(1000);
  // Record every frame until the stream is done.
  await page.evaluate(() => {
    const w = window as unknown as Record<string, unknown>;
    const frames: number[] = [];
    const long: {
      duration: number;
      blocking: number;
      scripts: { fn: string; invoker: string; ms: number }[];
    }[] = [];
    w.__nsightFrames = frames;
    w.__nsightLong = long;
    w.__nsightRecording = true;
    let last = -1; // from the first frame on
    const tick = (now: number): void => {
      if (last >= 0) {
        frames.push(now - last);
      }
      last = now;
      if (w.__nsightRecording) {
        requestAnimationFrame(tick);
      }
    };
    requestAnimationFrame(tick);
    try {
      new PerformanceObserver(list => {
        for (const entry of list.getEntries()) {
          const e = entry as PerformanceEntry & {
            blockingDuration?: number;
            scripts?: {
              sourceFunctionName?: string;
              invoker?: string;
              duration: number;
            }[];
          };
          // What ran in the frame (its longest scripts): our code or plotly's.
          const scripts = (e.scripts ?? [])
            .map(x => ({
              fn: x.sourceFunctionName ?? '',
              invoker: x.invoker ?? '',
              ms: x.duration
            }))
            .sort((a, b) => b.ms - a.ms)
            .slice(0, 3);
          long.push({
            duration: e.duration,
            blocking: e.blockingDuration ?? 0,
            scripts
          });
        }
      }).observe({ type: 'long-animation-frame', buffered: false });
    } catch {
      w.__nsightNoLoaf = true; // an older Chromium: the rAF intervals only
    }
  });
  // NSIGHT_LAB_SCALE_PROFILE=1: where the page's time goes (CDP's sampling
  // profiler), the functions of most self time.
  const cdp = process.env.NSIGHT_LAB_SCALE_PROFILE
    ? await page.context().newCDPSession(page.context().pages()[0])
    : null;
  await cdp?.send('Profiler.enable');
  await cdp?.send('Profiler.start');
  const startedAt = Date.now();
  await waitFile('done', 1700 * 1000);
  let profile: { fn: string; where: string; ms: number }[] = [];
  if (cdp) {
    const stopped = (await cdp.send('Profiler.stop')) as {
      profile: {
        nodes: {
          id: number;
          callFrame: { functionName: string; url: string; lineNumber: number };
        }[];
        samples: number[];
        timeDeltas: number[];
      };
    };
    const byNode = new Map<number, number>();
    stopped.profile.samples.forEach((id, i) => {
      byNode.set(id, (byNode.get(id) ?? 0) + stopped.profile.timeDeltas[i]);
    });
    const byFn = new Map<string, number>();
    for (const node of stopped.profile.nodes) {
      const f = node.callFrame;
      const key = `${f.functionName || '(anonymous)'}\t${f.url.split('/').pop()}:${f.lineNumber}`;
      byFn.set(key, (byFn.get(key) ?? 0) + (byNode.get(node.id) ?? 0) / 1000);
    }
    profile = [...byFn.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 40)
      .map(([key, ms]) => {
        const [fn, where] = key.split('\t');
        return { fn, where, ms: Math.round(ms) };
      });
  }
  const measured = await page.evaluate(() => {
    const w = window as unknown as Record<string, unknown>;
    w.__nsightRecording = false;
    const node = document.querySelector(
      '#nsight-lab-sidebar .jp-nsightLab-LiveView'
    ) as HTMLElement | null;
    return {
      frames_ms: w.__nsightFrames as number[],
      long_animation_frames: w.__nsightLong as unknown[],
      loaf_supported: !w.__nsightNoLoaf,
      live_run_count: node?.dataset.runCount ?? null,
      live_status: node?.dataset.status ?? null,
      last_update_ms: node?.dataset.lastUpdateMs ?? null
    };
  });
  writeResult('ui_stream_raw.json', {
    session_id: sessionId,
    session_panel: withPanel,
    profile,
    recorded_s: (Date.now() - startedAt) / 1000,
    ...measured
  });
  expect(measured.frames_ms.length).toBeGreaterThan(10);
});
