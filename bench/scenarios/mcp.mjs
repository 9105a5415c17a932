// Issue 13 item 5: the agent tool task_get over MCP Streamable HTTP (POST /mcp, tools/call)
// against GET /api/v1/tasks/{id} on the same daemon, same ids, same connections. The "baseline"
// column is the REST call: the target is MCP at half its throughput or better.
const TASKS = 10_000;

export default {
  name: 'mcp',
  order: 65,
  title: 'task_get over MCP (POST /mcp) vs GET /api/v1/tasks/{id}, 32 connections',
  async setup(h) {
    const { root, ids } = await h.seededProject(TASKS);
    const svc = await h.startSvc(root);
    const sample = ids.filter((_, i) => i % 100 === 0);
    const auth = { authorization: `Bearer ${svc.key}` };
    const mcp = {
      method: 'POST',
      path: '/mcp',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      bodies: sample.map((taskId, i) => JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'task_get', arguments: { taskId } } })),
      connections: 32,
      seconds: 3,
    };
    const rest = { paths: sample.map((id) => `/api/v1/tasks/${id}`), headers: auth, connections: 32, seconds: 3 };
    // A tool error is an HTTP 200 too: check once that the calls really answer the task.
    const probe = await fetch(`${svc.url}/mcp`, { method: 'POST', headers: mcp.headers, body: mcp.bodies[0] });
    const answer = await probe.json();
    if (!answer.result?.structuredContent?.task || answer.result.isError) throw new Error(`task_get over MCP did not answer the task: ${JSON.stringify(answer)}`);
    return {
      svc: () => h.loadServer(svc, mcp),
      baseline: () => h.loadServer(svc, rest),
      close: () => svc.stop(),
    };
  },
  targets: [
    { metric: 'rps', label: 'throughput vs REST', unit: 'req/s', of: 'ratio', op: '>=', value: 0.5 },
    { metric: 'p99', label: 'p99', unit: 'ms' },
    { metric: 'cpuUs', label: 'server CPU per request', unit: 'µs' },
  ],
};
