/**
 * One chart grid for every surface: the sidebar's live and session views and the
 * inline widget lay out their named charts with it, in the order the server sends,
 * and draw each through `mountChart`.
 *
 * Plain DOM (no Lumino, no JupyterLab): the anywidget bundle uses it too. Each chart
 * is a box `<div class="{className}" data-chart="{name}" data-state="drawn|missing">`
 * holding an optional `{className}-title`, a `{className}-missing` line (the words
 * shown when there is no figure) and the `{className}-plot` that plotly draws into.
 * With the `fold` option, the boxes with nothing to draw go after the drawn ones,
 * folded into one `<details class="{className}-folded">` line.
 */

import {
  IChartAppend,
  IChartHandle,
  IFigure,
  IMountOptions,
  mountChart
} from './mount';

/** Figures by chart name; a missing or `null` one has nothing to draw. */
export type FigureMap = Readonly<Record<string, IFigure | null | undefined>>;

/** Whether a figure has something to draw. */
export function hasData(figure: IFigure | null | undefined): boolean {
  return !!figure && Array.isArray(figure.data) && figure.data.length > 0;
}

/**
 * The chart names in the order served: `order` when the server sent one, then any
 * other figure in the figures' own key order (JSON objects keep it). Names are not
 * sorted or ranked here: the order is decided once, in Python.
 */
export function servedOrder(
  figures: FigureMap,
  order?: readonly string[] | null
): string[] {
  const served = [...(order ?? [])];
  const others = Object.keys(figures).filter(name => !served.includes(name));
  return [...served, ...others];
}

/**
 * Whether two figures draw the same: the same object, or equal JSON (a figure
 * re-sent unchanged, as a whole-trait update or a refetch does, is not redrawn).
 */
export function sameFigure(a: IFigure, b: IFigure): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/**
 * `order` with `first` moved to the front when it is there (a user's chosen chart).
 */
export function withFirst(
  order: readonly string[],
  first: string | null | undefined
): string[] {
  if (!first || !order.includes(first)) {
    return [...order];
  }
  return [first, ...order.filter(name => name !== first)];
}

/** How a grid draws its boxes. */
export interface IChartGridOptions {
  /** The class of each box; its parts get `-title`, `-missing` and `-plot`. */
  className: string;
  /** The title above a chart; none when absent or `null`. */
  title?: (name: string) => string | null;
  /**
   * The words shown when a chart of the order has no figure with data (given the
   * figure served without data, if any: `chartMissing` reads the reason Python put
   * in its `layout.meta.missing`); when absent or `null`, such a chart is left out.
   */
  missing?: (name: string, figure?: IFigure | null) => string | null;
  /**
   * When given, the charts with nothing to draw take no room among the drawn
   * ones: they fold into one `<details class="{className}-folded">` after them
   * whose summary line is what this returns for their names (what another
   * backend would add); opened, each says what it needs.
   */
  fold?: (names: string[]) => string;
  /** Passed to `mountChart`. */
  mount?: IMountOptions;
}

interface IBox {
  node: HTMLDivElement;
  missing: HTMLDivElement;
  plot: HTMLDivElement;
  handle: IChartHandle | null;
  /** The figure object the chart draws (given, or reached by its appends). */
  source: IFigure | null;
}

function div(className: string, parent?: HTMLElement): HTMLDivElement {
  const node = document.createElement('div');
  node.className = className;
  parent?.appendChild(node);
  return node;
}

/**
 * The charts of one view, laid out in `host` in the order given to `update`.
 */
export class ChartGrid {
  constructor(host: HTMLElement, options: IChartGridOptions) {
    this.host = host;
    this._options = options;
  }

  /** The element the boxes are laid out in. */
  readonly host: HTMLElement;

  /** The names of the charts shown, in order. */
  get names(): string[] {
    return [...this._order];
  }

  /** The box of chart `name`, when shown. */
  box(name: string): HTMLElement | undefined {
    return this._boxes.get(name)?.node;
  }

  /** The mounted chart `name`, when drawn. */
  handle(name: string): IChartHandle | undefined {
    return this._boxes.get(name)?.handle ?? undefined;
  }

  /**
   * Show the charts named in `order`, in that order: draw those with a figure
   * (in place when already drawn; a figure equal to the one drawn is not drawn
   * again), say what is missing for the others, and remove the charts not named.
   */
  update(order: readonly string[], figures: FigureMap): void {
    const missingText = this._options.missing;
    const shown: string[] = [];
    for (const name of order) {
      if (shown.includes(name)) {
        continue;
      }
      const figure = figures[name];
      const words = hasData(figure)
        ? null
        : (missingText?.(name, figure) ?? null);
      if (!hasData(figure) && words === null) {
        continue;
      }
      shown.push(name);
      const box = this._box(name);
      if (figure && hasData(figure)) {
        this._draw(box, figure);
      } else {
        this._showMissing(box, words ?? '');
      }
    }
    for (const [name, box] of this._boxes) {
      if (!shown.includes(name)) {
        box.handle?.dispose();
        box.node.remove();
        this._boxes.delete(name);
      }
    }
    // Append in order: a box already there moves, so the DOM follows `order`.
    const fold = this._options.fold;
    const missing = shown.filter(
      name => this._boxes.get(name)?.node.dataset.state === 'missing'
    );
    for (const name of shown) {
      const box = this._boxes.get(name);
      if (box && !(fold && missing.includes(name))) {
        this.host.appendChild(box.node);
      }
    }
    if (fold) {
      const folded = this._foldedNode();
      folded.hidden = missing.length === 0;
      const summary = folded.firstElementChild;
      if (summary) {
        summary.textContent = missing.length > 0 ? fold(missing) : '';
      }
      for (const name of missing) {
        const box = this._boxes.get(name);
        if (box) {
          folded.appendChild(box.node);
        }
      }
      this.host.appendChild(folded);
    }
    this._order = shown;
  }

  /** The line the charts with nothing to draw fold into (`fold`). */
  get folded(): HTMLDetailsElement | null {
    return this._folded;
  }

  /** Add live points to the charts drawn (`mountChart`'s `append`), by name. */
  append(changes: Readonly<Record<string, IChartAppend>>): void {
    for (const [name, change] of Object.entries(changes)) {
      this._boxes.get(name)?.handle?.append(change);
    }
  }

  /**
   * A view delta's changes from the figures `from` to `to` (`model/view.ts`):
   * each chart drawing `from`'s figure gets its appends (`extendTraces`, no
   * redraw of the rest) and is then known to draw `to`'s, which the next
   * `update` does not draw again. Other charts are left to `update`.
   */
  appendChanges(
    from: FigureMap,
    to: FigureMap,
    changes: Readonly<Record<string, IChartAppend | null>>
  ): void {
    for (const [name, change] of Object.entries(changes)) {
      const box = this._boxes.get(name);
      const next = to[name];
      if (
        !box?.handle ||
        !change ||
        change.figure ||
        !next ||
        box.source !== from[name]
      ) {
        continue;
      }
      box.handle.append(change);
      box.source = next;
    }
  }

  /** Remove every chart. */
  dispose(): void {
    for (const box of this._boxes.values()) {
      box.handle?.dispose();
      box.node.remove();
    }
    this._boxes.clear();
    this._order = [];
    this._folded?.remove();
    this._folded = null;
  }

  private _foldedNode(): HTMLDetailsElement {
    if (!this._folded) {
      const cls = this._options.className;
      this._folded = document.createElement('details');
      this._folded.className = `${cls}-folded`;
      const summary = document.createElement('summary');
      summary.className = `${cls}-foldedSummary`;
      this._folded.appendChild(summary);
    }
    return this._folded;
  }

  private _box(name: string): IBox {
    let box = this._boxes.get(name);
    if (box) {
      return box;
    }
    const cls = this._options.className;
    // In the document before it is drawn: plotly sizes a chart from its element.
    const node = div(cls, this.host);
    node.dataset.chart = name;
    const title = this._options.title?.(name) ?? null;
    if (title !== null) {
      div(`${cls}-title`, node).textContent = title;
    }
    box = {
      node,
      missing: div(`${cls}-missing`, node),
      plot: div(`${cls}-plot`, node),
      handle: null,
      source: null
    };
    this._boxes.set(name, box);
    return box;
  }

  private _draw(box: IBox, figure: IFigure): void {
    box.missing.textContent = '';
    box.missing.hidden = true;
    box.plot.hidden = false;
    if (!box.handle) {
      box.handle = mountChart(box.plot, figure, this._options.mount);
    } else if (
      box.source !== figure &&
      !sameFigure(box.handle.figure, figure)
    ) {
      box.handle.update(figure);
    }
    box.source = figure;
    box.node.dataset.state = 'drawn';
  }

  private _showMissing(box: IBox, words: string): void {
    box.missing.textContent = words;
    box.missing.hidden = false;
    box.plot.hidden = true;
    if (box.handle) {
      box.handle.dispose();
      box.handle = null;
    }
    box.source = null;
    box.node.dataset.state = 'missing';
  }

  private _options: IChartGridOptions;
  private _boxes = new Map<string, IBox>();
  private _order: string[] = [];
  private _folded: HTMLDetailsElement | null = null;
}
