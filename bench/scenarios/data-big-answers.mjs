// Issue 18 item 6: GET /api/v1/tasks/{id} (4 connections) while 4 other connections read 8 MB
// answers from /transactions without pause. A worker serialises an answer and the daemon copies
// its bytes into the response; parsed and serialised again on the event loop, each cost about
// 100 ms and raised the probe's p99 from 6.8 to 147 ms. No baseline: the target is absolute.

const PAD = 'x'.repeat(8_000);
const ROWS = 1_000;

export default {
  name: 'data-big-answers',
  order: 73,
  title: 'GET /api/v1/tasks/{id}, 4 connections, while 4 connections read 8 MB /transactions answers',
  warmup: false,
  async setup(h) {
    const { root, ids } = await h.seededProject(1_000);
    const svc = await h.startSvc(root);
    const headers = { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' };
    const post = async (path, body, want = 200) => {
      const res = await fetch(svc.url + path, { method: 'POST', headers, body: JSON.stringify(body) });
      if (res.status !== want) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
      return res.arrayBuffer();
    };
    await post('/api/v1/data', { name: 'big', schema: { tables: { pages: { columns: { pad: { type: 'text' } } } } } }, 201);
    for (let i = 0; i < ROWS; i += 100) await post('/api/v1/data/big/transactions', { operations: [{ op: 'insert', table: 'pages', rows: Array.from({ length: 100 }, () => ({ pad: PAD })) }] });
    const bigBody = JSON.stringify({ operations: Array.from({ length: ROWS / 200 }, (_, k) => ({ op: 'list', table: 'pages', limit: 200, offset: k * 200 })) });
    const size = (await post('/api/v1/data/big/transactions', JSON.parse(bigBody))).byteLength;
    const paths = ids.slice(0, 100).map((id) => `/api/v1/tasks/${id}`);
    const probe = () => h.loadServer(svc, { paths, headers: { authorization: headers.authorization }, connections: 4, seconds: 4 });
    return {
      svc: async () => {
        const calm = await probe();
        const big = h.loadServer(svc, { path: '/api/v1/data/big/transactions', method: 'POST', body: bigBody, headers, connections: 4, seconds: 5 });
        await h.sleep(300);
        const during = await probe();
        const b = await big;
        if (b.non2xx || b.errors) throw new Error(`big answers: ${b.non2xx} non-2xx, ${b.errors} errors`);
        return { p99: during.p99, p50: during.p50, max: during.max, calmP99: calm.p99, bigPerS: b.rps, mb: size / 1e6 };
      },
      close: () => svc.stop(),
    };
  },
  targets: [
    { metric: 'p99', label: 'task GET p99 during the big answers', unit: 'ms', op: '<', value: 20 },
    { metric: 'calmP99', label: 'p99 without them', unit: 'ms' },
    { metric: 'max', label: 'slowest task GET during them', unit: 'ms' },
    { metric: 'bigPerS', label: 'big answers served', unit: '/s' },
    { metric: 'mb', label: 'size of one answer', unit: 'MB' },
  ],
};
