/**
 * The part of plotly.js that nsight-lab uses, typed by hand: `plotly.js-basic-dist-min` (scatter and bar traces only: all the figures need)
 * ships no types and `src/charts/mount.ts` needs only these entry points.
 */
declare module 'plotly.js-basic-dist-min' {
  export interface IPlotlyConfig {
    responsive?: boolean;
    displaylogo?: boolean;
    displayModeBar?: boolean | 'hover';
    staticPlot?: boolean;
  }

  export interface IPlotly {
    react(
      root: HTMLElement,
      data: ReadonlyArray<Record<string, unknown>>,
      layout?: Record<string, unknown>,
      config?: IPlotlyConfig
    ): Promise<HTMLElement>;
    purge(root: HTMLElement): HTMLElement;
    addTraces(
      root: HTMLElement,
      traces: ReadonlyArray<Record<string, unknown>>
    ): Promise<HTMLElement>;
    extendTraces(
      root: HTMLElement,
      update: Record<string, unknown[][]>,
      indices: number[],
      maxPoints?: number
    ): Promise<HTMLElement>;
    /** Draw again from the root's own `data` and `layout` (changed in place). */
    redraw(root: HTMLElement): Promise<HTMLElement>;
    Plots: {
      resize(root: HTMLElement): Promise<void> | void;
    };
  }

  const Plotly: IPlotly;
  export default Plotly;
}
