/**
 * Small DOM helpers. Text is always set with `textContent`: names that come from
 * users (annotations, kernels, notebooks) are never parsed as HTML.
 */

/** Make an element with a class and, optionally, text. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A `<button>` with a label, a tooltip and a click handler. */
export function button(
  className: string,
  label: string,
  title: string,
  onClick: () => void
): HTMLButtonElement {
  const node = h('button', `jp-nsightLab-Button ${className}`, label);
  node.type = 'button';
  node.title = title;
  node.addEventListener('click', onClick);
  return node;
}

/** A table with a header row and text cells. */
export function textTable(
  className: string,
  header: string[],
  rows: string[][]
): HTMLTableElement {
  const table = h('table', `jp-nsightLab-Table ${className}`);
  const head = table.createTHead().insertRow();
  for (const label of header) {
    const th = h('th', undefined, label);
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const cells of rows) {
    const row = body.insertRow();
    for (const text of cells) {
      row.insertCell().textContent = text;
    }
  }
  return table;
}
