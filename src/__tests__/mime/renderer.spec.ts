/**
 * The renderer of a cell's final output (nsight-lab's session JSON), from the
 * bundle Python wrote into `tests/fixtures/wire.json` (`final_bundle`): charts
 * through mountChart in the served order, words for the charts with nothing to
 * draw, the progress and the summary table as the widget formats them, a one-line
 * error for unreadable data, and a rank that wins over the widget view and HTML.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import {
  RenderMimeRegistry,
  standardRendererFactories
} from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { IChartHandle, IFigure, mountChart } from '../../charts/mount';
import { chartMissing, foldedCharts, isChartKind } from '../../charts/titles';
import extension, {
  SESSION_MIME_TYPE,
  SESSION_RANK,
  rendererFactory
} from '../../mime/index';
import { RENDERER_CLASS, readBundle } from '../../mime/renderer';
import { BUNDLE_VERSION, ISessionBundle } from '../../mime/types';
import { formatSummaryCell, summaryColumns } from '../../widget/format';
import { withoutTitle } from '../../widget/index';

jest.mock('../../charts/mount', () => ({
  mountChart: jest.fn((el: HTMLElement, figure: IFigure): IChartHandle => {
    const handle = {
      element: el,
      figure,
      isDisposed: false,
      update: jest.fn(),
      append: jest.fn(),
      dispose: jest.fn(() => {
        handle.isDisposed = true;
      })
    };
    return handle;
  })
}));

const mount = mountChart as jest.Mock;

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

interface IFs {
  readFileSync(path: string, encoding: 'utf-8'): string;
}

const WIRE = JSON.parse(
  jest
    .requireActual<IFs>('fs')
    .readFileSync(`${__dirname}/../../../tests/fixtures/wire.json`, 'utf-8')
) as { final_bundle: ISessionBundle };

/**
 * The charts a bundle shows: its order's kinds, and the per-rank charts only where
 * served with data (a single-process session has no "per rank" chart to miss).
 */
function shownCharts(bundle: ISessionBundle): string[] {
  return bundle.chart_order.filter(
    name => isChartKind(name) || (bundle.figures[name]?.data.length ?? 0) > 0
  );
}

/** The fixture bundle, a fresh copy per use (tests change theirs). */
function fixture(): ISessionBundle {
  return JSON.parse(JSON.stringify(WIRE.final_bundle)) as ISessionBundle;
}

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

function mimeModel(data: unknown, trusted = false): IRenderMime.IMimeModel {
  return {
    trusted,
    data: { [SESSION_MIME_TYPE]: data } as IRenderMime.IMimeModel['data'],
    metadata: {},
    setData: () => undefined
  };
}

function createRenderer(): IRenderMime.IRenderer {
  return rendererFactory.createRenderer({
    mimeType: SESSION_MIME_TYPE,
    sanitizer: { sanitize: (html: string) => html },
    resolver: null,
    linkHandler: null,
    latexTypesetter: null
  });
}

const shown: Widget[] = [];

/** A renderer attached to the page, with `data` rendered. */
async function rendered(data: unknown): Promise<IRenderMime.IRenderer> {
  const renderer = createRenderer();
  Widget.attach(renderer, document.body);
  shown.push(renderer);
  await renderer.renderModel(mimeModel(data));
  return renderer;
}

function chartBoxes(node: HTMLElement): HTMLElement[] {
  return Array.from(
    node.querySelectorAll<HTMLElement>('.jp-nsightLab-Widget-chart')
  );
}

beforeEach(() => {
  mount.mockClear();
});

afterEach(() => {
  for (const widget of shown.splice(0)) {
    widget.dispose();
  }
});

describe('the session renderer', () => {
  it('draws the charts with data, in the served order', async () => {
    const bundle = fixture();
    const renderer = await rendered(bundle);
    const boxes = chartBoxes(renderer.node);
    // The drawn ones in the served order, then those with nothing to draw (folded).
    const hasFigure = (name: string) =>
      (bundle.figures[name]?.data.length ?? 0) > 0;
    expect(boxes.map(box => box.dataset.chart)).toEqual([
      ...shownCharts(bundle).filter(hasFigure),
      ...shownCharts(bundle).filter(name => !hasFigure(name))
    ]);
    const drawn = boxes.filter(box => box.dataset.state === 'drawn');
    expect(drawn.map(box => box.dataset.chart)).toEqual(
      bundle.chart_order.filter(
        name => (bundle.figures[name]?.data.length ?? 0) > 0
      )
    );
    expect(drawn.length).toBeGreaterThanOrEqual(2); // duration and clocks
    // Each drawn through mountChart with the figure Python built.
    expect(mount.mock.calls.map(call => call[1])).toEqual(
      drawn.map(box => bundle.figures[box.dataset.chart!])
    );
  });

  it('says why a chart has nothing to draw', async () => {
    const bundle = fixture();
    bundle.figures.clocks = { data: [], layout: {} }; // the cpu backend's
    const renderer = await rendered(bundle);
    const missing = chartBoxes(renderer.node).filter(
      box => box.dataset.state === 'missing'
    );
    // Every chart of the order with nothing to draw: the empty clocks chart, the
    // roofline and traffic without figures (no peaks in the fixture), and so on.
    const empty = shownCharts(bundle).filter(
      name => (bundle.figures[name]?.data.length ?? 0) === 0
    );
    expect(missing.map(box => box.dataset.chart)).toEqual(empty);
    expect(empty).toEqual(
      expect.arrayContaining(['clocks', 'roofline', 'traffic'])
    );
    for (const box of missing) {
      const words = box.querySelector('.jp-nsightLab-Widget-chart-missing');
      expect(words?.textContent).toBe(chartMissing(box.dataset.chart!));
      expect(words?.textContent).not.toBe('');
    }
    const words = (name: string) =>
      missing.find(box => box.dataset.chart === name)?.textContent;
    expect(words('clocks')).toContain('NVML');
    expect(words('roofline')).toContain('%nsight peaks --cpu');
  });

  it('folds the charts with nothing to draw into one line, as the session panel', async () => {
    const bundle = fixture();
    bundle.figures.clocks = { data: [], layout: {} }; // the cpu backend's
    const renderer = await rendered(bundle);
    const charts = renderer.node.querySelector<HTMLElement>(
      '.jp-nsightLab-Widget-charts'
    )!;
    const folded = charts.querySelector<HTMLDetailsElement>(
      ':scope > .jp-nsightLab-Widget-chart-folded'
    );
    expect(folded).not.toBeNull();
    expect(folded!.open).toBe(false);
    expect(charts.lastElementChild).toBe(folded); // after the drawn charts
    const empty = shownCharts(bundle).filter(
      name => (bundle.figures[name]?.data.length ?? 0) === 0
    );
    // One line in the panel's words; each chart's reason inside it.
    expect(folded!.querySelector('summary')!.textContent).toBe(
      foldedCharts(empty)
    );
    expect(
      Array.from(
        folded!.querySelectorAll<HTMLElement>('.jp-nsightLab-Widget-chart')
      ).map(box => box.dataset.chart)
    ).toEqual(empty);
    // No box with nothing to draw outside the folded line.
    const loose = Array.from(
      charts.querySelectorAll<HTMLElement>(
        ':scope > .jp-nsightLab-Widget-chart'
      )
    );
    expect(loose.every(box => box.dataset.state === 'drawn')).toBe(true);
  });

  it('shows the progress, the status and the summary as the widget does', async () => {
    const bundle = fixture();
    const renderer = await rendered(bundle);
    const node = renderer.node;
    expect(node.classList).toContain(RENDERER_CLASS);
    expect(node.querySelector('.jp-nsightLab-Widget-title')?.textContent).toBe(
      `nsight-lab session ${bundle.session_id}`
    );
    expect(node.querySelector('.jp-nsightLab-Widget-status')?.textContent).toBe(
      'completed'
    );
    expect(
      node.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow')
    ).toBe('100');
    const progress = bundle.progress as { text: string };
    expect(
      node.querySelector('.jp-nsightLab-Widget-progressText')?.textContent
    ).toBe(progress.text);
    // The header names the session; the message does not say it again.
    expect(
      node.querySelector('.jp-nsightLab-Widget-message')?.textContent
    ).toBe(withoutTitle(bundle.message, bundle.session_id));
    const table = node.querySelector<HTMLTableElement>(
      'table.jp-nsightLab-Widget-summary'
    )!;
    const columns = summaryColumns(bundle.summary);
    expect(
      Array.from(table.tHead!.rows[0].cells).map(c => c.textContent)
    ).toEqual(columns);
    const rows = table.tBodies[0].rows;
    expect(rows).toHaveLength(bundle.summary.length);
    bundle.summary.forEach((row, i) => {
      expect(Array.from(rows[i].cells).map(c => c.textContent)).toEqual(
        columns.map(column => formatSummaryCell(row, column))
      );
    });
  });

  it('says the answer first: the headline, the flags and notes, the table, then the charts', async () => {
    const bundle = fixture();
    bundle.message = `nsight-lab session ${bundle.session_id}: backend cpu on AMD EPYC`;
    bundle.headline =
      "! 1 region flagged: runs too spread to use; each flag's cause and what to do are right below";
    bundle.checks = [
      {
        region: 'encoder',
        config: 'n=64',
        kind: 'not_modelled',
        text: 'TFLOP/s not shown: the work model does not count aten._transformer_encoder_layer_fwd',
        cause: '',
        action: ''
      },
      {
        region: 'add',
        config: 'n=512',
        kind: 'unsteady',
        text: 'runs spread 85 % (RSD): the median is not usable',
        cause: 'the host was busy',
        action: 'rerun on an idle machine'
      }
    ];
    const node = (await rendered(bundle)).node;
    const view = node.querySelector<HTMLElement>('.jp-nsightLab-Widget')!;
    const parts = Array.from(view.children).filter(
      child => !(child as HTMLElement).hidden
    );
    expect(parts.map(part => part.className)).toEqual([
      'jp-nsightLab-Widget-headline',
      'jp-nsightLab-Widget-header',
      'jp-nsightLab-Widget-progress',
      'jp-nsightLab-Widget-message',
      'jp-nsightLab-Widget-checks',
      'jp-nsightLab-Widget-findings',
      'jp-nsightLab-Widget-summary',
      'jp-nsightLab-Widget-charts'
    ]);
    expect(parts[0].textContent).toBe(bundle.headline);
    // The flag first, with its cause and action once; the note after it.
    const items = Array.from(parts[4].querySelectorAll('li'));
    expect(items.map(item => item.className)).toEqual([
      'jp-nsightLab-RunTable-flag',
      'jp-nsightLab-RunTable-note'
    ]);
    expect(items[1].textContent).toContain(
      'aten._transformer_encoder_layer_fwd'
    );
    // The session's title once: in the header, not again in the message.
    expect(view.textContent!.split('nsight-lab session ')).toHaveLength(2);
    expect(parts[3].textContent).toBe('backend cpu on AMD EPYC');
  });

  it('says nothing before the header where nothing is flagged', async () => {
    const bundle = fixture();
    delete bundle.headline; // an output saved before the headline was kept
    delete bundle.checks;
    const node = (await rendered(bundle)).node;
    expect(
      node.querySelector<HTMLElement>('.jp-nsightLab-Widget-headline')!.hidden
    ).toBe(true);
    expect(
      node.querySelector<HTMLElement>('.jp-nsightLab-Widget-checks')!.hidden
    ).toBe(true);
  });

  it('folds no per-rank chart into a single-process session', async () => {
    const bundle = fixture();
    bundle.chart_order = [...bundle.chart_order, 'ranks', 'rank_clocks'];
    delete bundle.figures.ranks;
    delete bundle.figures.rank_clocks;
    const node = (await rendered(bundle)).node;
    const names = chartBoxes(node).map(box => box.dataset.chart);
    expect(names).not.toContain('ranks');
    expect(names).not.toContain('rank_clocks');
    expect(
      node.querySelector('.jp-nsightLab-Widget-chart-foldedSummary')!
        .textContent
    ).not.toContain('per rank');
  });

  it('keeps the served column order of a saved notebook (keys sorted)', async () => {
    const bundle = fixture();
    const served = summaryColumns(bundle.summary);
    // nbformat writes a notebook's JSON with its keys sorted.
    bundle.summary = bundle.summary.map(row =>
      Object.fromEntries(
        Object.keys(row)
          .sort()
          .map(key => [key, row[key]])
      )
    );
    expect(summaryColumns(bundle.summary)).not.toEqual(served);
    const renderer = await rendered(bundle);
    const head = renderer.node.querySelector('table')!.tHead!.rows[0].cells;
    expect(Array.from(head).map(c => c.textContent)).toEqual(served);
    expect(served.slice(0, 3)).toEqual([
      'Region',
      'n',
      'Duration (host timer)'
    ]);
  });

  it('sets text from the profile as text only', async () => {
    const bundle = fixture();
    const hostile = '<img src=x onerror="window.nsightPwned=1">';
    bundle.summary[0].Annotation = hostile;
    bundle.message = hostile;
    const renderer = await rendered(bundle);
    expect(renderer.node.querySelector('img')).toBeNull();
    expect(renderer.node.textContent).toContain(hostile);
  });

  it('draws once attached (plotly measures its element)', async () => {
    const renderer = createRenderer();
    shown.push(renderer);
    await renderer.renderModel(mimeModel(fixture()));
    expect(mount).not.toHaveBeenCalled();
    Widget.attach(renderer, document.body);
    expect(mount).toHaveBeenCalled();
    const calls = mount.mock.calls.length;
    Widget.detach(renderer);
    Widget.attach(renderer, document.body); // moved: not drawn twice
    expect(mount.mock.calls.length).toBe(calls);
  });

  it('removes its charts when disposed or given another output', async () => {
    const renderer = await rendered(fixture());
    const first = mount.mock.results.map(r => r.value as IChartHandle);
    await renderer.renderModel(mimeModel(fixture()));
    expect(first.every(handle => handle.isDisposed)).toBe(true);
    expect(chartBoxes(renderer.node).length).toBe(
      shownCharts(fixture()).length
    );
    const second = mount.mock.results
      .slice(first.length)
      .map(r => r.value as IChartHandle);
    renderer.dispose();
    expect(second.every(handle => handle.isDisposed)).toBe(true);
  });

  it('says in one line what is wrong with unreadable data', async () => {
    for (const [data, words] of [
      [null, 'it is not a JSON object'],
      [{ ...fixture(), session_id: 'x', figures: [] }, 'session_id, figures'],
      [{ ...fixture(), version: BUNDLE_VERSION + 1 }, 'upgrade nsight-lab']
    ] as [unknown, string][]) {
      const renderer = await rendered(data);
      const error = renderer.node.querySelector(`.${RENDERER_CLASS}-error`);
      expect(error?.textContent).toContain(words);
      expect(error?.textContent).toMatch(/^\[nsight-lab\] cannot draw/);
      expect(error?.textContent).not.toContain('\n');
      expect(chartBoxes(renderer.node)).toHaveLength(0);
    }
    expect(readBundle(fixture())).toEqual(fixture());
  });
});

describe('the mime extension', () => {
  it('is safe and ranked ahead of the widget view and HTML', () => {
    expect(extension.rendererFactory).toBe(rendererFactory);
    expect(rendererFactory.safe).toBe(true);
    expect(rendererFactory.mimeTypes).toEqual([SESSION_MIME_TYPE]);
    expect(extension.rank).toBe(SESSION_RANK);
    expect(extension.dataType).toBe('json');

    // A registry as JupyterLab builds it: the standard renderers, the widget
    // manager's view at its rank (-10), then ours at the extension's rank.
    const registry = new RenderMimeRegistry({
      initialFactories: standardRendererFactories
    });
    registry.addFactory(
      {
        safe: false,
        mimeTypes: [WIDGET_VIEW],
        createRenderer: () => new Widget() as IRenderMime.IRenderer
      },
      -10
    );
    registry.addFactory(extension.rendererFactory, extension.rank);
    const bundle = {
      [SESSION_MIME_TYPE]: fixture(),
      [WIDGET_VIEW]: { model_id: 'x', version_major: 2, version_minor: 1 },
      'text/html': '<p>static</p>',
      'text/plain': 'text'
    } as unknown as IRenderMime.IMimeModel['data'];
    // Trusted (a cell just run) and untrusted (a notebook reopened) alike.
    expect(registry.preferredMimeType(bundle, 'any')).toBe(SESSION_MIME_TYPE);
    expect(registry.preferredMimeType(bundle, 'ensure')).toBe(
      SESSION_MIME_TYPE
    );
    expect(registry.mimeTypes.indexOf(SESSION_MIME_TYPE)).toBe(0);
  });
});
