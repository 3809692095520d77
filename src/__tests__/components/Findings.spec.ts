/**
 * Issue 31 in the lab: why a session's regions are slow, as the server ranked it.
 * The findings section (src/components/Findings.ts) shows the three marked `top`
 * (or the setting's count) with their evidence, what to try, the gain with its
 * basis and a confidence tag, and folds the rest behind "N more findings";
 * quality findings read apart. The session view puts it under the checks and
 * above the table, as do the inline widget and a cell's final output.
 */

import { nullTranslator } from '@jupyterlab/translation';

import { IChartHandle, IFigure } from '../../charts/mount';
import {
  CONFIDENCE_TEXT,
  findingHead,
  findingsSection,
  splitFindings
} from '../../components/Findings';
import { SessionView } from '../../components/SessionView';
import { bundleModel, readBundle } from '../../mime/renderer';
import { ISessionBundle } from '../../mime/types';
import { IRunsModel, ISessionDetail } from '../../tokens';
import {
  DEFAULT_SIDEBAR_SETTINGS,
  IFinding,
  ISessionResponse,
  ISidebarSettings
} from '../../types';
import { renderSession } from '../../widget/index';
import { XSS, run, session, sessionResponse } from '../fixtures';

jest.mock('../../charts/mount', () => ({
  mountChart: jest.fn((el: HTMLElement, figure: IFigure): IChartHandle => ({
    element: el,
    figure,
    isDisposed: false,
    update: jest.fn(),
    append: jest.fn(),
    dispose: jest.fn()
  }))
}));

/** The directory of this spec (jest's CommonJS wrapper defines it). */
declare const __dirname: string;

interface IFs {
  readFileSync(path: string, encoding: 'utf-8'): string;
}

function readJson<T>(path: string): T {
  return JSON.parse(
    jest
      .requireActual<IFs>('fs')
      .readFileSync(`${__dirname}/../../../${path}`, 'utf-8')
  ) as T;
}

const WIRE = readJson<{
  live_session: ISessionResponse;
  final_bundle: ISessionBundle;
}>('tests/fixtures/wire.json');

const trans = nullTranslator.load('nsight-lab');

/**
 * The H200 fixture's cupti session (tests/fixtures/h200_block.sqlite, session 3),
 * as `nsight-lab explain 3 --json` gives four of its 14 findings: throttled first,
 * then the diagnoses, what the backend cannot answer last.
 */
const H200: IFinding[] = [
  {
    region: 'layernorm_1, qkv_proj, split_heads and 9 more',
    regions: [
      'layernorm_1',
      'qkv_proj',
      'split_heads',
      'flash_attention',
      'merge_heads',
      'out_proj',
      'residual_1',
      'layernorm_2',
      'mlp_up',
      'gelu',
      'mlp_down',
      'residual_2'
    ],
    config: '',
    config_index: null,
    family: 'quality',
    kind: 'throttled',
    statement:
      'throttled (12 regions): the GPU held its SM clock down (software power cap): the numbers hold for that clock',
    evidence: [
      'throttled in 360 of 360 runs',
      'SM clock 1965 MHz median (1965\u20131980)'
    ],
    action: 'profile with --clock-control base --thermal auto',
    gain: null,
    gain_basis: '',
    confidence: 'measured',
    basis: 'NVML clock-event reasons of each run',
    answered_by: '',
    time_ns: 5582354.5,
    rank: 1,
    top: true
  },
  {
    region: 'mlp_up',
    regions: ['mlp_up'],
    config: '',
    config_index: 0,
    family: 'bound',
    kind: 'compute_bound',
    statement: 'compute-bound at 72 % of the bf16 roof; on the tensor path',
    evidence: [
      'memory 303.9 GB/s = 6.3 % of 4.800 TB/s (datasheet); bytes modelled',
      'bf16 711.3 TFLOP/s = 72 % of 989.5 TFLOP/s (datasheet); FLOPs modelled'
    ],
    action:
      "shapes that fill the GPU (dimensions multiples of 128), the library's best algorithm (torch.compile mode='max-autotune')",
    gain: 1.391,
    gain_basis: 'at most 1.39\u00d7 if it reached the bf16 roof',
    confidence: 'work model',
    basis: "the work model's FLOPs over the measured duration",
    answered_by: '',
    time_ns: 1545672.0,
    rank: 2,
    top: true
  },
  {
    region: 'split_heads',
    regions: ['split_heads'],
    config: 'n=512',
    config_index: 0,
    family: 'bound',
    kind: 'latency_bound',
    statement:
      'latency-bound: neither DRAM (23 % of its roof) nor bf16 compute (0.03 %) is near its roof',
    evidence: [
      'memory 1.123 TB/s = 23 % of 4.800 TB/s (datasheet); bytes modelled'
    ],
    action: 'more parallel work per launch (larger batches or tiles)',
    gain: 4.274,
    gain_basis: 'at most 4.3\u00d7 if it reached the DRAM roof',
    confidence: 'work model',
    basis: "the work model's bytes over the measured duration",
    answered_by: '--backend cupti',
    time_ns: 358558.5,
    rank: 3,
    top: true
  },
  {
    region: '',
    regions: [],
    config: '',
    config_index: null,
    family: 'coverage',
    kind: 'no_dram_bytes',
    statement:
      "DRAM bytes are modelled, not measured: excess traffic and L2 residency are not answered, and fusion headroom is the model's",
    evidence: [],
    action:
      'profile again with --backend pm --metrics dram__bytes_read.sum,dram__bytes_write.sum',
    gain: null,
    gain_basis: '',
    confidence: 'timing',
    basis: 'what this backend measures',
    answered_by:
      '--backend pm --metrics dram__bytes_read.sum,dram__bytes_write.sum',
    time_ns: 0,
    rank: 4,
    top: false
  }
];

/** A copy of the H200 findings (tests change theirs). */
function h200(): IFinding[] {
  return H200.map(f => ({ ...f }));
}

function items(node: ParentNode, selector = ''): HTMLLIElement[] {
  return Array.from(
    node.querySelectorAll<HTMLLIElement>(
      `${selector} .jp-nsightLab-Findings-item`.trim()
    )
  );
}

function shownItems(section: HTMLElement): HTMLLIElement[] {
  return Array.from(
    section.querySelectorAll<HTMLLIElement>(
      ':scope > .jp-nsightLab-Findings-list > .jp-nsightLab-Findings-item'
    )
  );
}

function foldedItems(section: HTMLElement): HTMLLIElement[] {
  return items(section, '.jp-nsightLab-Findings-more');
}

describe('findingsSection', () => {
  it('is nothing without findings', () => {
    expect(findingsSection([])).toBeNull();
    expect(findingsSection(undefined)).toBeNull();
    expect(findingsSection(null)).toBeNull();
  });

  it('shows the three marked top, the rest folded behind "N more findings"', () => {
    // The live session of wire.json: four too-few-runs findings (three top),
    // then three that the cpu backend cannot answer.
    const served = WIRE.live_session.findings!;
    const section = findingsSection(served)!;
    expect(
      section.querySelector('.jp-nsightLab-Findings-title')!.textContent
    ).toBe('Why it is slow');
    const shown = shownItems(section);
    expect(shown.map(li => Number(li.dataset.rank))).toEqual(
      served.filter(f => f.top).map(f => f.rank)
    );
    const more = section.querySelector<HTMLDetailsElement>(
      '.jp-nsightLab-Findings-more'
    )!;
    expect(more.open).toBe(false);
    const rest = served.length - shown.length;
    expect(more.querySelector('summary')!.textContent).toBe(
      `${rest} more findings`
    );
    expect(foldedItems(section)).toHaveLength(rest);
    // Numbered on from the shown ones.
    expect(more.querySelector('ol')!.start).toBe(shown.length + 1);
    expect(
      shown[0].querySelector('.jp-nsightLab-Findings-head')!.textContent
    ).toBe(
      `${findingHead(served[0])} ${CONFIDENCE_TEXT[served[0].confidence]}`
    );
  });

  it('puts the top ones first even where a finding ranked between them is not top', () => {
    const findings = h200();
    findings[1].top = false; // rank 2 waits: its regions were named already
    findings[3].top = true;
    const [first, rest] = splitFindings(findings);
    expect(first.map(f => f.rank)).toEqual([1, 3, 4]);
    expect(rest.map(f => f.rank)).toEqual([2]);
    const section = findingsSection(findings)!;
    expect(shownItems(section).map(li => li.dataset.rank)).toEqual([
      '1',
      '3',
      '4'
    ]);
    expect(
      section.querySelector('.jp-nsightLab-Findings-more summary')!.textContent
    ).toBe('1 more finding');
  });

  it('shows as many as asked, folding the rest or nothing', () => {
    const none = findingsSection(h200(), { shown: 0 })!;
    expect(shownItems(none)).toHaveLength(0);
    expect(
      none.querySelector('.jp-nsightLab-Findings-more summary')!.textContent
    ).toBe('4 more findings');
    const one = findingsSection(h200(), { shown: 1 })!;
    expect(shownItems(one).map(li => li.dataset.kind)).toEqual(['throttled']);
    const all = findingsSection(h200(), { shown: 10 })!;
    expect(shownItems(all)).toHaveLength(4);
    expect(all.querySelector('.jp-nsightLab-Findings-more')).toBeNull();
    expect(
      findingsSection(h200(), {
        open: true
      })!.querySelector<HTMLDetailsElement>('.jp-nsightLab-Findings-more')!.open
    ).toBe(true);
  });

  it('says each finding as the static page does: statement, evidence, try, gain, how sure', () => {
    const [throttled, bound, latency, coverage] = items(
      findingsSection(h200(), { shown: 4 })!
    );
    const line = (li: HTMLElement, kind: string): string | null =>
      li.querySelector(`.jp-nsightLab-Findings-${kind}`)?.textContent ?? null;

    // Measurement quality: said apart (its class, the flags' colour in CSS).
    expect(throttled.classList).toContain('jp-nsightLab-Findings-quality');
    expect(bound.classList).not.toContain('jp-nsightLab-Findings-quality');
    expect(throttled.dataset.family).toBe('quality');
    expect(line(throttled, 'where')).toBe(
      'layernorm_1, qkv_proj, split_heads and 9 more'
    );
    // Every region on hover, where the line names the first three.
    expect(
      throttled.querySelector<HTMLElement>('.jp-nsightLab-Findings-where')!
        .title
    ).toBe(H200[0].regions.join(', '));
    expect(line(throttled, 'evidence')).toBe(
      'evidence: throttled in 360 of 360 runs \u00b7 SM clock 1965 MHz median (1965\u20131980)'
    );
    expect(line(throttled, 'action')).toBe(
      'try: profile with --clock-control base --thermal auto'
    );
    expect(line(throttled, 'gain')).toBeNull(); // no bound to give
    const tag = throttled.querySelector<HTMLElement>(
      '.jp-nsightLab-Findings-confidence'
    )!;
    expect(tag.textContent).toBe('measured');
    expect(tag.dataset.confidence).toBe('measured');
    expect(tag.title).toBe('basis: NVML clock-event reasons of each run');

    expect(line(bound, 'statement')).toBe(H200[1].statement);
    expect(line(bound, 'gain')).toBe(
      'gain: at most 1.39\u00d7 if it reached the bf16 roof'
    );
    expect(line(bound, 'confidence')).toBe('work model');

    // A config in parentheses; what another backend would settle.
    expect(line(latency, 'where')).toBe('split_heads (n=512)');
    expect(line(latency, 'settle')).toBe('--backend cupti would settle it');

    // A session-wide finding; a coverage finding's action already names the
    // backend, so no "would settle it" line; timing reads "timing only".
    expect(line(coverage, 'where')).toBe('session');
    expect(line(coverage, 'settle')).toBeNull();
    expect(line(coverage, 'evidence')).toBeNull();
    expect(line(coverage, 'confidence')).toBe('timing only');
  });

  it('sets the profile text as text only', () => {
    const findings = h200();
    findings[0].region = XSS;
    findings[0].regions = [XSS];
    findings[0].statement = XSS;
    findings[0].evidence = [XSS];
    const section = findingsSection(findings)!;
    expect(section.querySelector('img')).toBeNull();
    expect(
      section.querySelector('.jp-nsightLab-Findings-statement')!.textContent
    ).toBe(XSS);
  });
});

const SETTINGS = (findingsShown: number): ISidebarSettings => ({
  ...DEFAULT_SIDEBAR_SETTINGS,
  findingsShown
});

function modelWith(settings: ISidebarSettings): IRunsModel {
  const model: Partial<IRunsModel> = {
    settings,
    exportSession: jest.fn(),
    downloadReport: jest.fn(),
    deleteSession: jest.fn()
  };
  return model as IRunsModel;
}

function detail(id: number, findings: IFinding[]): ISessionDetail {
  const s = session(id, { backend: 'cupti' });
  const runs = [run(1, id), run(2, id)];
  const response = sessionResponse(s, runs);
  return {
    session: s,
    figures: response.figures ?? {},
    chartOrder: response.chart_order ?? null,
    summary: [{ Region: 'mlp_up', Duration: '1.546 ms' }],
    checks: [
      {
        region: 'mlp_up',
        config: '',
        kind: 'throttled',
        text: 'throttled in 30 of 30 runs',
        cause: 'software power cap',
        action: 'profile with --clock-control base'
      }
    ],
    findings
  };
}

describe('the session view', () => {
  /** Where each part sits among the view's elements (document order). */
  function order(view: SessionView, selector: string): number {
    return Array.from(view.node.querySelectorAll('*')).indexOf(
      view.node.querySelector(selector)!
    );
  }

  it('says why it is slow under the checks and above the table', () => {
    const view = new SessionView(modelWith(DEFAULT_SIDEBAR_SETTINGS), trans);
    view.setDetail(detail(3, h200()));
    const checks = order(view, '.jp-nsightLab-RunTable-checks');
    const findings = order(view, '.jp-nsightLab-Findings');
    const table = order(view, '.jp-nsightLab-SessionView-table table');
    const charts = order(view, '.jp-nsightLab-SessionView-charts');
    expect(checks).toBeGreaterThan(-1);
    expect(findings).toBeGreaterThan(checks);
    expect(table).toBeGreaterThan(findings);
    expect(charts).toBeGreaterThan(table);
    const section = view.node.querySelector<HTMLElement>(
      '.jp-nsightLab-Findings'
    )!;
    // The throttled finding leads.
    expect(shownItems(section).map(li => li.dataset.kind)).toEqual([
      'throttled',
      'compute_bound',
      'latency_bound'
    ]);
    expect(foldedItems(section)).toHaveLength(1);
    view.dispose();
  });

  it('shows as many as the findingsShown setting says', () => {
    const view = new SessionView(modelWith(SETTINGS(1)), trans);
    view.setDetail(detail(3, h200()));
    const section = view.node.querySelector<HTMLElement>(
      '.jp-nsightLab-Findings'
    )!;
    expect(shownItems(section)).toHaveLength(1);
    expect(
      section.querySelector('.jp-nsightLab-Findings-more summary')!.textContent
    ).toBe('3 more findings');
    view.dispose();
  });

  it('keeps the folded findings open across refreshes of one session, not into another', () => {
    const view = new SessionView(modelWith(DEFAULT_SIDEBAR_SETTINGS), trans);
    view.setDetail(detail(3, h200()));
    const fold = (): HTMLDetailsElement =>
      view.node.querySelector<HTMLDetailsElement>(
        '.jp-nsightLab-Findings-more'
      )!;
    fold().open = true;
    view.setDetail(detail(3, h200())); // a refresh: new runs
    expect(fold().open).toBe(true);
    view.setDetail(detail(4, h200())); // another session
    expect(fold().open).toBe(false);
    view.dispose();
  });

  it('has no findings section for a session without findings', () => {
    const view = new SessionView(modelWith(DEFAULT_SIDEBAR_SETTINGS), trans);
    view.setDetail(detail(3, []));
    expect(view.node.querySelector('.jp-nsightLab-Findings')).toBeNull();
    expect(
      view.node.querySelector('.jp-nsightLab-SessionView-table table')
    ).not.toBeNull();
    view.dispose();
  });
});

describe("the inline widget's final output", () => {
  function bundle(findings?: IFinding[]): ISessionBundle {
    const copy = JSON.parse(
      JSON.stringify(WIRE.final_bundle)
    ) as ISessionBundle;
    if (findings === undefined) {
      delete copy.findings;
    } else {
      copy.findings = findings;
    }
    return copy;
  }

  it('says why it is slow before the table and the charts', () => {
    const el = document.createElement('div');
    const cleanup = renderSession(bundleModel(bundle(h200())), el);
    const slot = el.querySelector<HTMLElement>(
      '.jp-nsightLab-Widget-findings'
    )!;
    expect(slot.hidden).toBe(false);
    const parts = Array.from(el.querySelectorAll<HTMLElement>('*'));
    const at = (selector: string): number =>
      parts.indexOf(el.querySelector<HTMLElement>(selector)!);
    expect(at('.jp-nsightLab-Widget-findings')).toBeGreaterThan(
      at('.jp-nsightLab-Widget-message')
    );
    expect(at('.jp-nsightLab-Widget-findings')).toBeLessThan(
      at('.jp-nsightLab-Widget-summary')
    );
    expect(at('.jp-nsightLab-Widget-findings')).toBeLessThan(
      at('.jp-nsightLab-Widget-charts')
    );
    const section = slot.querySelector<HTMLElement>('.jp-nsightLab-Findings')!;
    expect(shownItems(section)[0].classList).toContain(
      'jp-nsightLab-Findings-quality'
    );
    expect(shownItems(section)).toHaveLength(3);
    expect(foldedItems(section)).toHaveLength(1);
    cleanup();
  });

  it('says nothing of findings in an output saved before they were kept', () => {
    const el = document.createElement('div');
    const cleanup = renderSession(bundleModel(bundle()), el);
    expect(
      el.querySelector<HTMLElement>('.jp-nsightLab-Widget-findings')!.hidden
    ).toBe(true);
    expect(el.querySelector('.jp-nsightLab-Findings')).toBeNull();
    cleanup();
  });

  it('refuses unreadable findings in one line', () => {
    const broken = {
      ...bundle(),
      findings: [{ statement: 3 }]
    } as unknown as ISessionBundle;
    const read = readBundle(broken);
    expect(typeof read).toBe('string');
    expect(read).toContain('unreadable findings');
    expect(readBundle(bundle(h200()))).not.toEqual(expect.any(String));
  });
});

describe('the findingsShown setting', () => {
  it('has the default of schema/sidebar.json, as every setting does', () => {
    const schema = readJson<{
      properties: Record<string, { default: unknown }>;
    }>('schema/sidebar.json');
    const defaults = Object.fromEntries(
      Object.entries(schema.properties).map(([key, p]) => [key, p.default])
    );
    expect(defaults).toEqual({ ...DEFAULT_SIDEBAR_SETTINGS });
    expect(DEFAULT_SIDEBAR_SETTINGS.findingsShown).toBe(3);
  });
});
