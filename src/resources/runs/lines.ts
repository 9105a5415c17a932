// Bytes of a process's output as lines of text: what the supervisor reads an agent CLI's stdout and
// stderr with, bounded whatever the CLI writes.

/** What a cut line ends with: the line was longer than maxLineBytes and the rest of it was dropped. */
export const cutMarker = (maxLineBytes: number) => ` …[svc: line longer than ${maxLineBytes} bytes, cut]`;

/**
 * Splits bytes into lines: on LF, a CR before it dropped, decoded as UTF-8 once a line is whole (a
 * character split across chunks is whole by then: LF is never part of a multi-byte character).
 * A line longer than `max` bytes is cut at a character boundary and marked; the rest of it, up to
 * the next LF, is skipped without being kept. At most max + 1 bytes are ever held.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private skipping = false;

  constructor(private readonly max: number) {}

  /** Bytes held of an unfinished line (never more than max + 1). */
  get held(): number {
    return this.size;
  }

  push(chunk: Buffer): string[] {
    const out: string[] = [];
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(10, from);
      const end = nl < 0 ? chunk.length : nl;
      const len = end - from;
      // One byte over max is held: it may be the CR of a CRLF that ends a line of exactly max bytes.
      const room = this.max + 1 - this.size;
      if (this.skipping) {
        if (nl >= 0) this.skipping = false;
      } else if (nl >= 0) {
        if (this.size === 0 && len <= room)
          out.push(this.line(chunk, from, end, false)); // the usual case: no copy
        else {
          this.hold(chunk, from, from + Math.min(len, room));
          out.push(this.take(len > room));
        }
      } else if (len > room) {
        this.hold(chunk, from, from + room);
        out.push(this.take(true));
        this.skipping = true;
      } else {
        this.hold(chunk, from, end);
      }
      if (nl < 0) return out;
      from = nl + 1;
    }
  }

  /** The stream ended: its last line if it had no LF. */
  end(): string[] {
    const last = !this.skipping && this.size > 0 ? [this.take(false)] : [];
    this.skipping = false;
    return last;
  }

  private hold(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    this.parts.push(Buffer.from(chunk.subarray(from, to))); // a copy: the chunk is not kept alive for it
    this.size += to - from;
  }

  private take(cut: boolean): string {
    const buf = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    return this.line(buf, 0, buf.length, cut);
  }

  private line(buf: Buffer, from: number, end: number, cut: boolean): string {
    if (!cut && end > from && buf[end - 1] === 13) end--;
    if (!cut && end - from <= this.max) return buf.toString('utf8', from, end);
    return buf.toString('utf8', from, Math.max(from, utf8Boundary(buf, from + this.max))) + cutMarker(this.max);
  }
}

/** The largest index <= end that does not split a UTF-8 character of `buf`. */
export function utf8Boundary(buf: Buffer, end: number): number {
  let lead = end - 1;
  // Back over at most three continuation bytes (10xxxxxx) to the character's first byte.
  while (lead >= 0 && end - lead <= 4 && (buf[lead]! & 0xc0) === 0x80) lead--;
  if (lead < 0) return end;
  const b = buf[lead]!;
  const len = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return lead + len > end ? lead : end;
}
