// A run's log as the board follows it: items read from GET /runs/{id}/log and items carried by
// run:activity events, each shown once and in order. An event is used as it comes when it
// continues what is shown; a gap before it (events missed, the page opened late) or an item it
// carries cut to the event's 2 KiB makes the tail read the log from the last item shown instead.
// Events that arrive during a read wait for it. No DOM here: test/board-runs.test.ts drives it.

import { EVENT_TEXT_MAX } from '../../src/resources/runs/run-log.js';
import type { LogItem } from './types.js';

/** An event's item was cut: one of its texts is past the event's limit and ends in "…" (run-log.ts eventItem). */
export const wasCut = (item: Record<string, unknown>): boolean => Object.values(item).some((v) => typeof v === 'string' && v.length > EVENT_TEXT_MAX && v.endsWith('…'));

/** One page of the log after a seq, and whether more may follow it (a full page). */
export type ReadLog = (after: number) => Promise<{ items: LogItem[]; more: boolean }>;

export class LogTail {
  private reading: Promise<void> | null = null;
  private waiting: { fromSeq: number; items: LogItem[] }[] = [];

  constructor(
    private readonly read: ReadLog,
    private readonly show: (items: LogItem[]) => void,
    /** The last seq shown: items after it are shown next. */
    public last = 0,
  ) {}

  /** The items of a run:activity event of this run. */
  event(fromSeq: number, items: LogItem[]): void {
    if (this.reading) this.waiting.push({ fromSeq, items });
    else if (!this.take(fromSeq, items)) void this.catchUp();
  }

  /** Shows what the event adds; false when the log must be read (a gap, or a cut item). */
  private take(fromSeq: number, items: LogItem[]): boolean {
    if (fromSeq > this.last + 1) return false;
    const fresh: LogItem[] = [];
    let whole = true;
    for (const item of items) {
      if (item.seq <= this.last) continue;
      if (item.seq !== this.last + 1 || wasCut(item)) {
        whole = false;
        break;
      }
      fresh.push(item);
      this.last = item.seq;
    }
    if (fresh.length) this.show(fresh);
    return whole;
  }

  /**
   * Reads the log from the last item shown to its end, then what events brought meanwhile. A read
   * that fails is left for the next event or reload to try again.
   */
  catchUp(): Promise<void> {
    this.reading ??= (async () => {
      try {
        for (;;) {
          const page = await this.read(this.last);
          const fresh = page.items.filter((i) => i.seq > this.last);
          if (fresh.length) {
            this.last = fresh.at(-1)!.seq;
            this.show(fresh);
          }
          if (page.more && fresh.length) continue;
          // No await from here to the end of the turn, so no event slips in between. A waiting
          // event that still does not follow means the log grew since the read: read again
          // (unless the read found nothing new, which would only spin).
          const waiting = this.waiting.splice(0);
          if (waiting.every((e) => this.take(e.fromSeq, e.items)) || !fresh.length) break;
        }
      } catch {
        // the daemon is away or the run is gone: the next event or reload reads again
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}
