// Chat overhead: what the daemon adds to a completion in agent mode (plain: the whole answer;
// streamed: the first content chunk) over calling the same fake upstream directly, on both wires:
// chat completions, and the Responses API (translated to the same chat upstream). The upstream
// answers at once, so the difference is svc's own cost: key check, agent and skills lookup, the
// upstream hop, the session write and completion:finished. Requests are sequential (one client),
// from their own process, alternating direct and through svc.
import { fileURLToPath } from 'node:url';

const COUNT = 400;
const CLIENT = fileURLToPath(new URL('../lib/chat-client.mjs', import.meta.url));

export default {
  name: 'chat',
  order: 80,
  title: `POST /v1/chat/completions and /v1/responses, agent mode, ${COUNT} sequential calls vs the upstream directly`,
  async setup(h) {
    const upstream = await h.startBaseline('fake-openai.mjs');
    const root = h.makeProject({ providers: { fake: { baseUrl: `${upstream.url}/v1`, apiKey: 'sk-bench-upstream-key-000' } } });
    const svc = await h.startSvc(root);
    const auth = { authorization: `Bearer ${svc.key}` };
    const created = await fetch(`${svc.url}/api/v1/agents`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', model: 'fake/m1', systemPrompt: 'You answer briefly.' }),
    });
    if (created.status !== 201) throw new Error(`creating the agent answered ${created.status}`);
    const messages = [{ role: 'user', content: 'Say ok.' }];
    const run = (stream) => async () => {
      const direct = await h.runJsonChild(CLIENT, { url: `${upstream.url}/v1/chat/completions`, headers: {}, body: { model: 'm1', messages }, stream, count: COUNT });
      const through = await h.runJsonChild(CLIENT, { url: `${svc.url}/v1/chat/completions`, headers: auth, body: { model: 'svc', agent: 'bench', messages }, stream, count: COUNT });
      return { added: through.p50 - direct.p50, svcP50: through.p50, directP50: direct.p50, svcP99: through.p99 };
    };
    const runResponses = async (stream) => {
      const direct = await h.runJsonChild(CLIENT, { url: `${upstream.url}/v1/chat/completions`, headers: {}, body: { model: 'm1', messages }, stream, count: COUNT });
      const through = await h.runJsonChild(CLIENT, {
        url: `${svc.url}/v1/responses`,
        headers: auth,
        body: { model: 'svc', agent: 'bench', input: 'Say ok.' },
        stream,
        count: COUNT,
        marker: '"delta":"ok"',
      });
      return through.p50 - direct.p50;
    };
    return {
      svc: async () => {
        const plain = await run(false)();
        const streamed = await run(true)();
        return {
          plainAdded: plain.added,
          plainP50: plain.svcP50,
          directP50: plain.directP50,
          streamAdded: streamed.added,
          streamP50: streamed.svcP50,
          responsesPlainAdded: await runResponses(false),
          responsesStreamAdded: await runResponses(true),
        };
      },
      close: async () => {
        await svc.stop();
        await upstream.stop();
      },
    };
  },
  targets: [
    { metric: 'plainAdded', label: 'added p50, plain completion', unit: 'ms', op: '<', value: 2 },
    { metric: 'streamAdded', label: 'added p50, first streamed chunk', unit: 'ms', op: '<', value: 5 },
    { metric: 'responsesPlainAdded', label: 'added p50, /v1/responses plain', unit: 'ms', op: '<', value: 2 },
    { metric: 'responsesStreamAdded', label: 'added p50, /v1/responses first text delta', unit: 'ms', op: '<', value: 5 },
    { metric: 'plainP50', label: 'p50 through svc, plain', unit: 'ms' },
    { metric: 'directP50', label: 'p50 upstream directly, plain', unit: 'ms' },
    { metric: 'streamP50', label: 'p50 through svc, first chunk', unit: 'ms' },
  ],
};
