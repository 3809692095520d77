/**
 * theme.ts: the host's --jp-* colours on a theme-neutral plotly layout.
 */
import {
  IChartTheme,
  TRANSPARENT,
  onThemeChange,
  readTheme,
  themeLayout
} from '../../charts/theme';

const DARK: IChartTheme = {
  fontColor: 'rgb(230, 230, 230)',
  fontFamily: 'Inter, sans-serif',
  gridColor: '#444',
  lineColor: '#666',
  hoverBackground: '#111'
};

function flushMutations(): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, 0));
}

afterEach(() => {
  document.body.removeAttribute('style');
  document.body.removeAttribute('data-jp-theme-name');
  document.body.removeAttribute('data-jp-theme-light');
});

describe('readTheme', () => {
  it('reads the --jp-* variables from document.body', () => {
    document.body.style.setProperty('--jp-ui-font-color1', 'rgb(1, 2, 3)');
    document.body.style.setProperty('--jp-ui-font-family', 'Roboto');
    document.body.style.setProperty('--jp-border-color2', '#abcdef');
    document.body.style.setProperty('--jp-border-color1', '#123456');
    document.body.style.setProperty('--jp-layout-color1', '#fefefe');

    expect(readTheme()).toEqual({
      fontColor: 'rgb(1, 2, 3)',
      fontFamily: 'Roboto',
      gridColor: '#abcdef',
      lineColor: '#123456',
      hoverBackground: '#fefefe'
    });
  });

  it('falls back to the text colour the element inherits (no --jp-* host)', () => {
    const el = document.createElement('div');
    el.style.color = 'rgb(9, 9, 9)';
    document.body.appendChild(el);

    const theme = readTheme(el);

    expect(theme.fontColor).toBe('rgb(9, 9, 9)');
    expect(theme.gridColor).toBe('');
    el.remove();
  });
});

describe('themeLayout', () => {
  it('sets font, grid and hover colours and transparent backgrounds', () => {
    const layout = themeLayout(
      {
        title: { text: 'Duration per run' },
        paper_bgcolor: 'white',
        xaxis: { title: { text: 'run' } },
        yaxis2: { overlaying: 'y', side: 'right' },
        font: { size: 12 }
      },
      DARK
    );

    expect(layout.paper_bgcolor).toBe(TRANSPARENT);
    expect(layout.plot_bgcolor).toBe(TRANSPARENT);
    expect(layout.font).toEqual({
      size: 12,
      color: DARK.fontColor,
      family: DARK.fontFamily
    });
    expect(layout.title).toEqual({ text: 'Duration per run' });
    for (const axis of ['xaxis', 'yaxis', 'yaxis2']) {
      expect(layout[axis]).toMatchObject({
        gridcolor: DARK.gridColor,
        zerolinecolor: DARK.gridColor,
        linecolor: DARK.lineColor
      });
    }
    expect(layout.xaxis).toMatchObject({ title: { text: 'run' } });
    expect(layout.yaxis2).toMatchObject({ overlaying: 'y', side: 'right' });
    expect(layout.hoverlabel).toEqual({
      bgcolor: DARK.hoverBackground,
      bordercolor: DARK.gridColor,
      font: { color: DARK.fontColor, family: DARK.fontFamily }
    });
  });

  it('leaves plotly defaults where the host has no colour', () => {
    const empty: IChartTheme = {
      fontColor: '',
      fontFamily: '',
      gridColor: '',
      lineColor: '',
      hoverBackground: ''
    };

    const layout = themeLayout({ font: { color: 'red' } }, empty);

    expect(layout.font).toEqual({ color: 'red' });
    expect(layout.xaxis).toEqual({});
  });

  it('does not modify the layout it is given', () => {
    const source = { xaxis: { type: 'log' } };

    themeLayout(source, DARK);

    expect(source).toEqual({ xaxis: { type: 'log' } });
  });
});

describe('onThemeChange', () => {
  it('calls back when JupyterLab switches theme, until disposed', async () => {
    const callback = jest.fn();
    const dispose = onThemeChange(callback);

    document.body.setAttribute('data-jp-theme-name', 'JupyterLab Dark');
    document.body.setAttribute('data-jp-theme-light', 'false');
    await flushMutations();
    expect(callback).toHaveBeenCalled();

    callback.mockClear();
    document.body.setAttribute('data-other', 'x');
    await flushMutations();
    expect(callback).not.toHaveBeenCalled();

    dispose();
    document.body.setAttribute('data-jp-theme-name', 'JupyterLab Light');
    await flushMutations();
    expect(callback).not.toHaveBeenCalled();
    document.body.removeAttribute('data-other');
  });
});
