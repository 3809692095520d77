/**
 * Untrusted names (annotations, kernels, session names, notebooks) show as text in
 * every view: never parsed as HTML.
 */

import { renderComparison } from '../../components/CompareView';
import { runTable } from '../../components/RunTable';
import { renderSessionRow } from '../../components/SessionList';
import { compareResponse, session, XSS } from '../fixtures';

function expectText(node: HTMLElement): void {
  expect(node.innerHTML).toContain('&lt;img');
  expect(node.querySelector('img')).toBeNull();
  expect(node.textContent).toContain(XSS);
}

describe('escaping', () => {
  it('shows a malicious session name and notebook in the list as text', () => {
    const row = document.createElement('div');

    renderSessionRow(row, session(7, { name: XSS, device: XSS }), 0);

    expectText(row);
  });

  it('shows a malicious annotation and kernel name in the run table as text', () => {
    const node = document.createElement('div');

    node.appendChild(
      runTable([{ Annotation: XSS, Metric: 'gpu__time_duration.sum' }])
    );

    expectText(node);
    const cells = Array.from(node.querySelectorAll('td')).map(
      td => td.textContent
    );
    expect(cells[0]).toBe(XSS);
  });

  it('shows a malicious annotation in the comparison as text', () => {
    const node = document.createElement('div');

    renderComparison(node, compareResponse(1, 2));

    expectText(node);
  });
});
