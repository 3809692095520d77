/**
 * Why a session's regions are slow, and what would help (issue 31): the findings
 * the server ranked (nsight_lab/analysis/findings, sent as `findings`), worded as
 * the cell's static page and `nsight-lab explain` word them
 * (nsight_lab/views/answer.py, nsight_lab/analysis/findings/text.py): each finding's
 * `region (config): statement`, then its evidence, `try: action`, `gain: basis`
 * and a small tag saying how sure it is. The first few are shown, the rest folded
 * behind "N more findings". Measurement-quality findings (said first by the
 * server) read in the flags' colour. Nothing is judged or ordered here beyond
 * what the server marked (`rank`, `top`); text is set with `textContent` only.
 *
 * Shared by the sidebar's session view and the inline widget's final output (the
 * MIME renderer draws that with the widget's code).
 */

import type { FindingConfidence, IFinding } from '../types';
import { h } from './dom';

/** Findings shown first where no setting says otherwise: the three marked `top`. */
export const FINDINGS_SHOWN = 3;

/** How each confidence reads (answer.py `_SURE`, text.py `SURE`). */
export const CONFIDENCE_TEXT: Readonly<Record<FindingConfidence, string>> = {
  measured: 'measured',
  'work model': 'work model',
  timing: 'timing only'
};

/** The class prefix of the findings section. */
const CLASS = 'jp-nsightLab-Findings';

/**
 * The findings in the order shown: those the server marked `top` (the three that
 * matter most, each about other regions where it can) in rank order, then the
 * rest in rank order; split after the first `shown`. With `shown` 3 this is the
 * static page's split (answer.py `_split`).
 */
export function splitFindings(
  findings: readonly IFinding[],
  shown: number = FINDINGS_SHOWN
): [IFinding[], IFinding[]] {
  const byRank = [...findings].sort((a, b) => a.rank - b.rank);
  const ordered = [...byRank.filter(f => f.top), ...byRank.filter(f => !f.top)];
  const n = Math.max(0, Math.floor(shown));
  return [ordered.slice(0, n), ordered.slice(n)];
}

/** Where a finding is: `region (config)`, `session` when it names no region. */
export function findingWhere(finding: IFinding): string {
  const where = finding.region || 'session';
  return finding.config ? `${where} (${finding.config})` : where;
}

/** `region (config): statement`, as the static page's head line. */
export function findingHead(finding: IFinding): string {
  return `${findingWhere(finding)}: ${finding.statement}`;
}

/** One finding as a list item: head line, confidence tag, then its details. */
export function findingItem(finding: IFinding): HTMLLIElement {
  const quality = finding.family === 'quality';
  const item = h('li', `${CLASS}-item${quality ? ` ${CLASS}-quality` : ''}`);
  item.dataset.family = finding.family;
  item.dataset.kind = finding.kind;
  item.dataset.rank = String(finding.rank);

  const head = h('div', `${CLASS}-head`);
  const where = h('span', `${CLASS}-where`, findingWhere(finding));
  // Every region it is about where its place names only the first few.
  if (Array.isArray(finding.regions) && finding.regions.length > 1) {
    where.title = finding.regions.join(', ');
  }
  head.append(where, ': ', h('span', `${CLASS}-statement`, finding.statement));
  const sure = h(
    'span',
    `${CLASS}-confidence`,
    CONFIDENCE_TEXT[finding.confidence] ?? String(finding.confidence)
  );
  sure.dataset.confidence = finding.confidence;
  sure.title = finding.basis
    ? `basis: ${finding.basis}`
    : `basis: ${sure.textContent}`;
  head.append(' ', sure);
  item.appendChild(head);

  const line = (kind: string, text: string): void => {
    item.appendChild(h('div', `${CLASS}-${kind}`, text));
  };
  const evidence = Array.isArray(finding.evidence) ? finding.evidence : [];
  // Its items apart (' · '): an item may hold a '; ' of its own.
  if (evidence.length > 0) {
    line('evidence', `evidence: ${evidence.join(' \u00b7 ')}`);
  }
  if (finding.action) {
    line('action', `try: ${finding.action}`);
  }
  if (finding.gain_basis) {
    line('gain', `gain: ${finding.gain_basis}`);
  }
  // What another backend would settle (a coverage finding's action says it).
  if (finding.answered_by && finding.family !== 'coverage') {
    line('settle', `${finding.answered_by} would settle it`);
  }
  return item;
}

/** An ordered list of `findings`, numbered from `start`. */
function findingList(
  findings: readonly IFinding[],
  start: number
): HTMLOListElement {
  const list = h('ol', `${CLASS}-list`);
  if (start > 1) {
    list.start = start;
  }
  list.append(...findings.map(findingItem));
  return list;
}

/** Options of {@link findingsSection}. */
export interface IFindingsOptions {
  /** Findings shown before the rest are folded (default {@link FINDINGS_SHOWN}). */
  shown?: number;
  /** Whether the folded rest starts open (kept across redraws by the caller). */
  open?: boolean;
}

/**
 * "Why it is slow": the first `shown` findings in full, the rest folded behind
 * "N more findings" (a `<details>`). `null` without findings.
 */
export function findingsSection(
  findings: readonly IFinding[] | null | undefined,
  options: IFindingsOptions = {}
): HTMLElement | null {
  if (!findings || findings.length === 0) {
    return null;
  }
  const [first, rest] = splitFindings(findings, options.shown);
  const section = h('section', CLASS);
  section.dataset.count = String(findings.length);
  section.appendChild(h('div', `${CLASS}-title`, 'Why it is slow'));
  if (first.length > 0) {
    section.appendChild(findingList(first, 1));
  }
  if (rest.length > 0) {
    const more = h('details', `${CLASS}-more`);
    more.open = options.open ?? false;
    more.appendChild(
      h(
        'summary',
        `${CLASS}-moreSummary`,
        `${rest.length} more finding${rest.length === 1 ? '' : 's'}`
      )
    );
    more.appendChild(findingList(rest, first.length + 1));
    section.appendChild(more);
  }
  return section;
}

/** Whether the folded findings under `parent` are open (to keep across redraws). */
export function findingsOpen(parent: Element): boolean {
  return (
    parent.querySelector<HTMLDetailsElement>(`.${CLASS}-more`)?.open ?? false
  );
}
