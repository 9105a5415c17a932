import { deserialize, serialize } from 'node:v8';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { startThread } from '../../lib/entry.js';

// The two ways a state statement reaches the thread that holds the PostgreSQL connection, while
// the daemon's thread blocks for the answer (sync.ts says why it blocks):
// - SharedChannel: libpq's blocking calls on a thread that sleeps in Atomics.wait; request and
//   answer are written into shared memory. The fast one, used whenever the optional `libpq`
//   addon loads.
// - PortChannel: the pure-JavaScript `pg` client on a thread with an event loop; requests and
//   answers go through a MessagePort and a shared counter wakes the daemon. Needs nothing native.

// What goes between the daemon (sync.ts) and the connection thread (thread.ts, libpq-thread.ts).
export type Request =
  | { kind: 'query'; sql: string; params: unknown[] }
  | { kind: 'exec'; sql: string }
  | { kind: 'reset' }
  | { kind: 'close' };

export type Reply = (
  | { rows: Record<string, unknown>[]; rowCount: number; binary?: string[]; error?: undefined }
  | { error: { message: string; code?: string; detail?: string; constraint?: string } }
) & {
  /** What the server said besides the answer (NOTICE, WARNING), for the daemon's debug log: never printed by the thread. */
  notices?: string[];
};

/** A request that runs SQL and is answered (the others tell the thread to stop). Answers come in the order the statements were sent. */
export type Statement = Extract<Request, { sql: string }>;

/** A connection not made in this time fails the statement (the daemon's wait allows for it). */
export const CONNECT_TIMEOUT_MS = 2_000;

export type Driver = 'libpq' | 'pg';

/**
 * One request at a time: post it, then wait for its answer (blocking, or as a promise that leaves
 * the daemon's thread free), then read it. Answers are numbered from 1 in posting order.
 */
export interface Channel {
  readonly driver: Driver;
  /** The thread has ended (it crashed, or was told to): it answers nothing more. */
  readonly dead: boolean;
  /** Sends a request; returns the number its answer will have. The previous answer must have been read. */
  post(req: Request): number;
  /** Blocks until answer `n` is there; false at `deadline` (performance.now()). */
  wait(n: number, deadline: number): boolean;
  /** As wait, without blocking: the daemon's thread serves other requests meanwhile. */
  waitAsync(n: number, deadline: number): Promise<boolean>;
  /** The answer that is there. */
  read(): Reply;
  /** Gives up on the thread (it may be stuck in a call to a server that stopped answering): it ends itself and its connection. */
  abandon(): void;
  close(): void;
}

/** Blocks until `cell` reaches `n`; false at the deadline. */
function waitFor(cell: Int32Array, index: number, n: number, deadline: number): boolean {
  for (let now = Atomics.load(cell, index); now < n; now = Atomics.load(cell, index)) {
    const left = deadline - performance.now();
    if (left <= 0) return false;
    Atomics.wait(cell, index, now, left);
  }
  return true;
}

/** Atomics.waitAsync (in every supported Node; typed only from TypeScript's es2024 lib). */
const waitAsync = (Atomics as unknown as {
  waitAsync(cell: Int32Array, index: number, value: number, timeout: number): { async: boolean; value: Promise<string> | string };
}).waitAsync;

/** waitFor without blocking: Atomics.waitAsync settles on the daemon's event loop when the thread notifies. */
async function waitForAsync(cell: Int32Array, index: number, n: number, deadline: number): Promise<boolean> {
  for (let now = Atomics.load(cell, index); now < n; now = Atomics.load(cell, index)) {
    const left = deadline - performance.now();
    if (left <= 0) return false;
    const w = waitAsync(cell, index, now, left);
    if (w.async) await w.value;
  }
  return true;
}

/** What a thread is started with. */
export interface SharedData {
  url: string;
  statementTimeoutMs: number;
  buffer: SharedArrayBuffer;
}

/** Room in the shared buffer for one message; a bigger one goes through the port. */
const ROOM = 256 * 1024;
const HEADER = 16;

/**
 * The shared buffer's layout: ctl[0] the last request's number, ctl[1] the last answered one,
 * ctl[2] the message's length (-1: it is on the port), ctl[3] set when the daemon gave up waiting.
 * Requests and answers alternate, so one data area serves both.
 */
export class SharedSlots {
  readonly ctl: Int32Array;
  readonly data: Uint8Array;
  constructor(buffer: SharedArrayBuffer) {
    this.ctl = new Int32Array(buffer, 0, 4);
    this.data = new Uint8Array(buffer, HEADER);
  }
  static create(): SharedSlots {
    return new SharedSlots(new SharedArrayBuffer(HEADER + ROOM));
  }
  get length(): number {
    return Atomics.load(this.ctl, 2);
  }
  get abandoned(): boolean {
    return Atomics.load(this.ctl, 3) === 1;
  }
}

/** Writes a message where the other side reads it: the shared buffer when it fits, else the port. */
export function writeMessage(slots: SharedSlots, port: MessagePort, message: Request | Reply): void {
  const bytes = serialize(message);
  if (bytes.length <= slots.data.length) {
    slots.data.set(bytes);
    Atomics.store(slots.ctl, 2, bytes.length);
  } else {
    port.postMessage(message);
    Atomics.store(slots.ctl, 2, -1);
  }
}

/** A connection thread that does not hold the process open, given its end of the port; `onExit` when it ends (a crash, or told to). */
function startConnectionThread(file: string, workerData: object, port: MessagePort, onExit: () => void): Worker {
  const worker = startThread(import.meta.url, file, { workerData: { ...workerData, port }, transferList: [port] });
  worker.unref();
  // A thread that dies takes its answers with it: a call waiting then reaches its deadline, and
  // the next one starts a new thread.
  worker.on('error', () => undefined);
  worker.on('exit', onExit);
  return worker;
}

export class SharedChannel implements Channel {
  readonly driver = 'libpq' as const;
  private readonly slots = SharedSlots.create();
  private readonly port: MessagePort;
  private seq = 0;
  dead = false;

  constructor(data: Omit<SharedData, 'buffer'>) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    // Never terminated: it ends itself on close or abandon, once its call in progress returns.
    startConnectionThread('./libpq-thread.js', { ...data, buffer: this.slots.ctl.buffer }, port2, () => (this.dead = true));
  }

  post(req: Request): number {
    writeMessage(this.slots, this.port, req);
    Atomics.store(this.slots.ctl, 0, ++this.seq);
    Atomics.notify(this.slots.ctl, 0);
    return this.seq;
  }

  wait(n: number, deadline: number): boolean {
    return waitFor(this.slots.ctl, 1, n, deadline);
  }

  waitAsync(n: number, deadline: number): Promise<boolean> {
    return waitForAsync(this.slots.ctl, 1, n, deadline);
  }

  read(): Reply {
    const len = this.slots.length;
    if (len >= 0) return deserialize(this.slots.data.subarray(0, len)) as Reply;
    return receiveMessageOnPort(this.port)!.message as Reply;
  }

  abandon(): void {
    // Woken (or, when busy, on its next look at ctl[0]), the thread sees ctl[3] and ends,
    // closing its connection and any transaction open on it.
    Atomics.store(this.slots.ctl, 3, 1);
    Atomics.store(this.slots.ctl, 0, ++this.seq);
    Atomics.notify(this.slots.ctl, 0);
  }

  close(): void {
    if (this.slots.abandoned) return;
    // Busy with a read whose answer nobody will take: writing a request now would race its
    // answer in the shared area. The abandon flag ends it once that call returns.
    if (Atomics.load(this.slots.ctl, 1) < this.seq) return this.abandon();
    this.post({ kind: 'close' });
  }
}

export class PortChannel implements Channel {
  readonly driver = 'pg' as const;
  private readonly port: MessagePort;
  private readonly worker: Worker;
  /** Answers given so far (thread.ts bumps it after each). */
  private readonly answered = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;
  dead = false;

  constructor(data: Omit<SharedData, 'buffer'>) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = startConnectionThread('./thread.js', { ...data, counter: this.answered.buffer }, port2, () => (this.dead = true));
  }

  post(req: Request): number {
    this.port.postMessage(req);
    return ++this.seq;
  }

  wait(n: number, deadline: number): boolean {
    return waitFor(this.answered, 0, n, deadline);
  }

  waitAsync(n: number, deadline: number): Promise<boolean> {
    return waitForAsync(this.answered, 0, n, deadline);
  }

  read(): Reply {
    return receiveMessageOnPort(this.port)!.message as Reply;
  }

  abandon(): void {
    // The connection may hang (a dead peer answers nothing): the thread drops it, then ends.
    this.port.postMessage({ kind: 'reset' } satisfies Request);
    this.close();
  }

  close(): void {
    this.port.postMessage({ kind: 'close' } satisfies Request);
    // The thread ends its connection and exits on its own; terminate is the fallback.
    const t = setTimeout(() => void this.worker.terminate(), 2_000);
    t.unref();
    this.worker.once('exit', () => clearTimeout(t));
  }
}
