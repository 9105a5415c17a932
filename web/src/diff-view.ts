// A run's diff as the board draws it (GET /api/v1/runs/{id}/diff): the branch and counts, then each
// file with its hunks, a page at a time. One panel per place that shows a diff (a run's page, the
// review on a task's page), each keeping what the person opened and paged.

import { ApiFailure, get, seg } from './api.js';
import { parseDiff, type DiffFile } from './diff.js';
import { h, type Child } from './dom.js';
import { page } from './page.js';
import { isLive } from './run-words.js';
import type { Run, RunDiff } from './types.js';

/** The diff is drawn a page at a time: files, and lines of a file. */
const FILE_PAGE = 50;
const LINE_PAGE = 400;

const counts = (added: number, removed: number): HTMLElement =>
  h('span', { class: 'counts', 'aria-label': `${added} lines added, ${removed} removed` }, h('span', { class: 'add' }, `+${added}`), ' ', h('span', { class: 'del' }, `−${removed}`));

export class DiffPanel {
  private diff: (RunDiff & { files: DiffFile[] }) | null = null;
  private error = '';
  private runId = '';
  private shownFiles = FILE_PAGE;
  private readonly shownLines = new Map<string, number>();
  private readonly closedFiles = new Set<string>();

  /** Reads the run's diff once it has committed its work (again only when its commit changes); another run starts the panel afresh. */
  async load(run: Run): Promise<void> {
    if (run.id !== this.runId) {
      this.runId = run.id;
      this.diff = null;
      this.error = '';
      this.shownFiles = FILE_PAGE;
      this.shownLines.clear();
      this.closedFiles.clear();
    }
    if (isLive(run) || !run.headCommit || this.diff?.headCommit === run.headCommit) return;
    try {
      const d = await get<RunDiff>(`/api/v1/runs/${seg(run.id)}/diff`);
      this.diff = { ...d, files: parseDiff(d.patch) };
      this.error = '';
    } catch (e) {
      this.error = e instanceof ApiFailure ? e.message : String(e);
    }
  }

  view(r: Run): Child {
    if (isLive(r)) return h('p', { class: 'muted' }, 'The changes appear here once the run has committed its work.');
    if (!r.headCommit) return h('p', { class: 'muted' }, 'No commit: the run changed nothing, or did not succeed.');
    if (this.error) return h('p', { class: 'error' }, this.error);
    const d = this.diff;
    if (!d || r.id !== this.runId) return h('p', { class: 'muted' }, 'Loading…');
    const files = d.files;
    const more = files.length - this.shownFiles;
    return [
      h(
        'p',
        { class: 'meta' },
        d.branch ? [h('code', null, d.branch), ' · '] : null,
        `${files.length} file${files.length === 1 ? '' : 's'} `,
        d.diffStat ? counts(d.diffStat.added, d.diffStat.removed) : null,
      ),
      d.truncated ? h('p', { class: 'hint note' }, `The diff is cut at 1 MiB: the rest is on the branch (git diff ${d.baseCommit?.slice(0, 12)}..${d.headCommit?.slice(0, 12)}).`) : null,
      files.length ? null : h('p', { class: 'muted' }, 'The commit changed nothing.'),
      ...files.slice(0, this.shownFiles).map((f) => this.fileView(f)),
      more > 0
        ? h('button', { type: 'button', class: 'small', onclick: () => ((this.shownFiles += FILE_PAGE), page.render()) }, `Show ${Math.min(more, FILE_PAGE)} more files (${more} not shown)`)
        : null,
    ];
  }

  private fileView(f: DiffFile): HTMLElement {
    const shownLines = this.shownLines.get(f.path) ?? LINE_PAGE;
    const rest = f.lines.length - shownLines;
    return h(
      'details',
      {
        class: 'diff-file',
        'data-path': f.path,
        open: !this.closedFiles.has(f.path) || undefined,
        ontoggle: (e: Event) => ((e.target as HTMLDetailsElement).open ? this.closedFiles.delete(f.path) : this.closedFiles.add(f.path)),
      },
      h(
        'summary',
        null,
        h('code', null, f.from ? `${f.from} → ${f.path}` : f.path),
        f.change === 'modified' ? null : h('span', { class: 'muted' }, ` ${f.change}`),
        ' ',
        f.binary ? h('span', { class: 'muted' }, 'binary') : counts(f.added, f.removed),
      ),
      f.binary || !f.lines.length
        ? null
        : h(
            'pre',
            { class: 'diff' },
            ...f.lines.slice(0, shownLines).map((l) => (l.kind === 'add' ? h('ins', null, l.text) : l.kind === 'del' ? h('del', null, l.text) : h('span', { class: l.kind }, l.text))),
          ),
      rest > 0
        ? h(
            'button',
            { type: 'button', class: 'small', onclick: () => (this.shownLines.set(f.path, shownLines + LINE_PAGE), page.render()) },
            `Show ${Math.min(rest, LINE_PAGE)} more lines (${rest} not shown)`,
          )
        : null,
    );
  }
}
