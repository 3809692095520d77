/**
 * What one redraw of the live duration chart costs plotly in this machine's
 * Chromium (issue 32: why a frame of the live view takes longer than 50 ms).
 *
 * A figure shaped as the server's live duration chart (4 regions: two band edges
 * and the runs per region, each run's marker size and symbol per point) of N points
 * per trace, drawn in a 420 x 170 px box (the sidebar's live chart); then
 * 5 extendTraces of 250 points per region (maxPoints N) and 3 Plotly.react of a
 * fresh copy. `--uniform`: one marker size and symbol per trace instead of per point.
 *
 * Run: node benchmarks/plotly_redraw.js [N ...] (default 250 500 1000 2000); prints
 * JSON (milliseconds). Uses ui-tests' Playwright and /usr/bin/chromium.
 */
const path = require('path');
const fs = require('fs');
const root = path.resolve(__dirname, '..');
const { chromium } = require(path.join(root, 'ui-tests', 'node_modules', 'playwright'));

const args = process.argv.slice(2);
const uniform = args.includes('--uniform');
const sizes = args.filter(a => /^\d+$/.test(a)).map(Number);

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await page.setContent('<div id="p" style="width:420px;height:170px"></div>');
  await page.addScriptTag({
    content: fs.readFileSync(
      path.join(root, 'node_modules', 'plotly.js-basic-dist-min', 'plotly-basic.min.js'),
      'utf8'
    )
  });
  const out = { uniform_markers: uniform, points_per_trace: {} };
  for (const n of sizes.length ? sizes : [250, 500, 1000, 2000]) {
    out.points_per_trace[n] = await page.evaluate(
      async ({ n, uniform }) => {
        const old = document.getElementById('p');
        const el = document.createElement('div');
        el.style.width = '420px';
        el.style.height = '170px';
        old.replaceWith(el);
        el.id = 'p';
        const data = [];
        for (let r = 0; r < 4; r++) {
          const x = [...Array(n).keys()];
          const y = x.map(() => 1 + r + Math.random() * 0.1);
          const edge = d => ({ type: 'scatter', mode: 'lines', x: [...x],
            y: y.map(v => v + d), line: { width: 0 }, hoverinfo: 'skip' });
          data.push(edge(-0.05), { ...edge(0.05), fill: 'tonexty' });
          data.push({ type: 'scatter', mode: 'lines+markers', x, y,
            marker: uniform ? { size: 7, symbol: 'circle' }
              : { size: Array(n).fill(7), symbol: Array(n).fill('circle') },
            customdata: x.map(() => ['region', '']) });
        }
        let t = performance.now();
        await Plotly.newPlot(el, data, { margin: { t: 10 } });
        const first = performance.now() - t;
        const extend = [];
        for (let k = 0; k < 5; k++) {
          const update = { x: [], y: [] };
          for (let r = 0; r < 4; r++) {
            update.x.push([...Array(250).keys()].map(i => n + 250 * k + i));
            update.y.push(Array(250).fill(1 + r));
          }
          t = performance.now();
          await Plotly.extendTraces(el, update, [2, 5, 8, 11], n);
          extend.push(Math.round(performance.now() - t));
        }
        const react = [];
        for (let k = 0; k < 3; k++) {
          const copy = JSON.parse(JSON.stringify(data));
          t = performance.now();
          await Plotly.react(el, copy, { margin: { t: 10 } });
          react.push(Math.round(performance.now() - t));
        }
        return { first_draw: Math.round(first), extend, react };
      },
      { n, uniform }
    );
  }
  console.log(JSON.stringify(out));
  await browser.close();
})();
