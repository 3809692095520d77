import { LabIcon } from '@jupyterlab/ui-components';

/**
 * A stopwatch over a bar chart, drawn in the theme's icon colour.
 */
const NSIGHT_LAB_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M9 1h6v2H9z"/>
    <path d="M12 4a9 9 0 1 0 0 18 9 9 0 0 0 0-18zm0 2a7 7 0 1 1 0 14 7 7 0 0 1 0-14z"/>
    <path d="M8 15h2v3H8zM11 11h2v7h-2zM14 13h2v5h-2z"/>
  </g>
</svg>`;

/** The nsight-lab icon, used for the sidebar tab and the command. */
export const nsightLabIcon = new LabIcon({
  name: 'nsight-lab:icon',
  svgstr: NSIGHT_LAB_SVG
});
