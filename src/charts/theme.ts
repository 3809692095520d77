/**
 * Theme colours for plotly layouts, read from the host's CSS variables.
 *
 * Figures come from Python theme-neutral (transparent backgrounds, no text colours);
 * this module gives them JupyterLab's `--jp-*` colours at mount and again when the
 * theme changes. Hosts without `--jp-*` variables (VS Code, Colab) fall back to
 * VS Code's variables, then to the text colour the chart's element inherits.
 */

/** A plotly layout (or any part of one) as JSON. */
export type Layout = Record<string, unknown>;

/** The colours and font a chart takes from its host. Empty: leave plotly's default. */
export interface IChartTheme {
  fontColor: string;
  fontFamily: string;
  gridColor: string;
  lineColor: string;
  hoverBackground: string;
}

/** Fully transparent: the chart shows the output area's background. */
export const TRANSPARENT = 'rgba(0,0,0,0)';

/** `document.body` attributes whose change means the theme changed. */
export const THEME_ATTRIBUTES: readonly string[] = [
  'data-jp-theme-light',
  'data-jp-theme-name',
  'data-vscode-theme-kind'
];

const AXIS_KEY = /^[xy]axis\d*$/;

function cssVariable(style: CSSStyleDeclaration, ...names: string[]): string {
  for (const name of names) {
    const value = style.getPropertyValue(name).trim();
    if (value) {
      return value;
    }
  }
  return '';
}

/**
 * Read the current theme from `document.body`'s CSS variables.
 *
 * @param el - The chart's element; its inherited text colour is the last fallback.
 */
export function readTheme(el?: HTMLElement): IChartTheme {
  const body = getComputedStyle(document.body);
  const inherited = el ? getComputedStyle(el).color.trim() : '';
  return {
    fontColor:
      cssVariable(body, '--jp-ui-font-color1', '--vscode-editor-foreground') ||
      inherited,
    fontFamily: cssVariable(
      body,
      '--jp-ui-font-family',
      '--vscode-font-family'
    ),
    gridColor: cssVariable(
      body,
      '--jp-border-color2',
      '--vscode-editorWidget-border'
    ),
    lineColor: cssVariable(
      body,
      '--jp-border-color1',
      '--vscode-editorWidget-border'
    ),
    hoverBackground: cssVariable(
      body,
      '--jp-layout-color1',
      '--jp-layout-color0',
      '--vscode-editor-background'
    )
  };
}

function asLayout(value: unknown): Layout {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Layout)
    : {};
}

/** Copy `source` with the non-empty entries of `extra` set on it. */
function withValues(source: unknown, extra: Record<string, string>): Layout {
  const out: Layout = { ...asLayout(source) };
  for (const [key, value] of Object.entries(extra)) {
    if (value) {
      out[key] = value;
    }
  }
  return out;
}

/**
 * Return a copy of `layout` in `theme`'s colours, with transparent backgrounds.
 *
 * Only styling keys change; the data-bearing parts of the layout (titles, ranges,
 * shapes, annotations) are kept as they are.
 */
export function themeLayout(
  layout: Layout | undefined,
  theme: IChartTheme
): Layout {
  const source = layout ?? {};
  const out: Layout = {
    ...source,
    paper_bgcolor: TRANSPARENT,
    plot_bgcolor: TRANSPARENT,
    font: withValues(source.font, {
      color: theme.fontColor,
      family: theme.fontFamily
    }),
    legend: { ...asLayout(source.legend), bgcolor: TRANSPARENT },
    hoverlabel: {
      ...withValues(source.hoverlabel, {
        bgcolor: theme.hoverBackground,
        bordercolor: theme.gridColor
      }),
      font: withValues(asLayout(source.hoverlabel).font, {
        color: theme.fontColor,
        family: theme.fontFamily
      })
    }
  };
  const axes = new Set(['xaxis', 'yaxis']);
  for (const key of Object.keys(source)) {
    if (AXIS_KEY.test(key)) {
      axes.add(key);
    }
  }
  for (const key of axes) {
    out[key] = withValues(source[key], {
      gridcolor: theme.gridColor,
      zerolinecolor: theme.gridColor,
      linecolor: theme.lineColor,
      tickcolor: theme.lineColor
    });
  }
  return out;
}

/**
 * Call `callback` whenever the host's theme changes.
 *
 * JupyterLab marks the theme on `document.body` (`data-jp-theme-light`,
 * `data-jp-theme-name`); VS Code with `data-vscode-theme-kind`.
 *
 * @returns A function that stops watching.
 */
export function onThemeChange(callback: () => void): () => void {
  if (typeof MutationObserver === 'undefined') {
    return () => undefined;
  }
  const observer = new MutationObserver(() => callback());
  observer.observe(document.body, {
    attributes: true,
    attributeFilter: [...THEME_ATTRIBUTES]
  });
  return () => observer.disconnect();
}
