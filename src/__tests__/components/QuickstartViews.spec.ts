/**
 * Issue 30, the CPU quickstart: the checks say each thing once and the flags first
 * (`checksList`), a text trace's legend symbol follows the theme (`legendTextIn`),
 * and a chart drawn before its element is in the page takes the page's height
 * once it is. Found in the recorded quickstart's views
 * (ui-tests/tests/quickstart.spec.ts): five regions too spread on a busy host
 * repeated one cause and action five times, notes came between the flags, the
 * traffic key's "Aa" kept the light theme's colour in the dark one, and the cell
 * output's charts stayed 240 px (drawn before the output area was attached), the
 * duration axis title running over the chart's title.
 */
import Plotly from 'plotly.js-basic-dist-min';

import { legendTextIn, mountChart } from '../../charts/mount';
import { checksList } from '../../components/RunTable';
import { ICheck } from '../../types';

jest.mock('plotly.js-basic-dist-min', () => ({
  __esModule: true,
  default: {
    react: jest.fn(() => Promise.resolve()),
    purge: jest.fn(),
    Plots: { resize: jest.fn() }
  }
}));

const BUSY = {
  kind: 'unsteady',
  cause: 'the host was busy: its speed probe read 18.01 µs to 28.99 µs',
  action: 'rerun on an idle machine with more --runs before reading the numbers'
} as const;

const CHECKS: ICheck[] = [
  {
    ...BUSY,
    region: 'load',
    config: 'n=64',
    text: 'runs spread 131 % (RSD): the median is not usable'
  },
  {
    region: 'encoder',
    config: 'n=64',
    kind: 'not_modelled',
    text: 'TFLOP/s not shown: the work model does not count aten._transformer_encoder_layer_fwd',
    cause: '',
    action: ''
  },
  {
    ...BUSY,
    region: 'matmul',
    config: 'n=64',
    text: 'runs spread 57 % (RSD): the median is not usable'
  },
  {
    ...BUSY,
    region: 'load',
    config: 'n=128',
    text: 'runs spread 131 % (RSD): the median is not usable'
  },
  {
    ...BUSY,
    region: 'matmul',
    config: 'n=128',
    cause: 'a few runs far from the rest: other work on the machine',
    text: 'runs spread 81 % (RSD): the median is not usable'
  },
  {
    region: 'encoder',
    config: 'n=128',
    kind: 'not_modelled',
    text: 'TFLOP/s not shown: the work model does not count aten._transformer_encoder_layer_fwd',
    cause: '',
    action: ''
  }
];

describe('the checks list', () => {
  it('says the flags first, each cause and action once, then the notes', () => {
    const list = checksList(CHECKS)!;
    const items = Array.from(list.querySelectorAll('li'));
    expect(items.map(item => item.className)).toEqual([
      'jp-nsightLab-RunTable-flag',
      'jp-nsightLab-RunTable-note'
    ]);
    // Each cause after the lines it explains, the one action once.
    expect(Array.from(items[0].children, c => c.textContent)).toEqual([
      '\u26a0 load (n=64), load (n=128): runs spread 131 % (RSD): the median is not usable',
      '\u26a0 matmul (n=64): runs spread 57 % (RSD): the median is not usable',
      `cause: ${BUSY.cause}`,
      '\u26a0 matmul (n=128): runs spread 81 % (RSD): the median is not usable',
      'cause: a few runs far from the rest: other work on the machine',
      `do: ${BUSY.action}`
    ]);
    expect(items[1].textContent).toBe(
      'encoder (n=64), encoder (n=128): TFLOP/s not shown: the work model does not count aten._transformer_encoder_layer_fwd'
    );
    // Nothing said twice.
    const text = list.textContent!;
    expect(text.split(BUSY.cause)).toHaveLength(2);
    expect(text.split(BUSY.action)).toHaveLength(2);
    expect(text.split('aten._transformer_encoder_layer_fwd')).toHaveLength(2);
  });
});

describe('the legend symbol of a text trace', () => {
  it('takes the theme colour (plotly keeps the first theme otherwise)', () => {
    const el = document.createElement('div');
    el.innerHTML =
      '<svg><g class="legend"><g class="pointtext"><text style="fill: rgb(0, 0, 0)">Aa</text></g></g>' +
      '<g class="scatterlayer"><g class="textpoint"><text style="fill: rgb(1, 2, 3)">1 GB/s</text></g></g></svg>';
    legendTextIn(el, 'rgba(255, 255, 255, 0.87)');
    const [symbol, label] = Array.from(el.querySelectorAll('text'));
    expect(symbol.style.fill).toBe('rgba(255, 255, 255, 0.87)');
    expect(label.style.fill).toBe('rgb(1, 2, 3)'); // plotly restyles the labels
    legendTextIn(el, ''); // no theme colour: left as drawn
    expect(symbol.style.fill).toBe('rgba(255, 255, 255, 0.87)');
  });
});

describe('a chart drawn before its element is in the page', () => {
  it('takes the height the page gives it once there', () => {
    const react = Plotly.react as jest.Mock;
    react.mockClear();
    const el = document.createElement('div');
    const figure = { data: [{ type: 'scatter', name: 'a' }], layout: {} };
    const handle = mountChart(el, figure); // a cell output, not attached yet
    const detached = react.mock.calls[0][2].height as number;
    // In the page, the stylesheet gives the element 360 px (no layout in jsdom).
    el.style.minHeight = '360px';
    document.body.appendChild(el);
    handle.update({ ...figure }); // the resize observer's draw, in a browser
    const placed = react.mock.calls[1][2].height as number;
    expect(placed - detached).toBe(360 - 240);
    // Drawn again (a theme change), it keeps that height: no legend added twice.
    handle.update({ ...figure, data: [...figure.data] });
    expect(react.mock.calls[2][2].height).toBe(placed);
    handle.dispose();
    el.remove();
  });
});
