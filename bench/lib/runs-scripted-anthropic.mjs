// A scripted Anthropic Messages API for the runs bench (Claude Code's ANTHROPIC_BASE_URL), its own
// process; prints {"port":N} when listening. Unlike test/scripted-anthropic.ts (one queue of turns
// for one CLI at a time) it answers from the conversation itself, so any number of Claude Code
// processes can talk to it at once: the number of assistant messages in a request says which turn
// it is. Each conversation: write a file, read the README, add a task note through svc's MCP tool
// (the task id is read from svc's prompt), then end with a summary. Events are streamed as the API
// streams them, `delayMs` apart (a model is not instant). Other requests (Claude Code's probes)
// get 404. GET /stats answers how many requests it took, by turn.
import { createServer } from 'node:http';

const { delayMs = 20 } = JSON.parse(process.argv[2] ?? '{}');
const stats = { requests: 0, byTurn: {}, sideRequests: 0 };
let ids = 0;
const id = (p) => `${p}_${(++ids).toString(36)}`;

function turnBlocks(turn, taskId) {
  const tool = (name, input) => ({ type: 'tool_use', id: id('toolu'), name, input });
  switch (turn) {
    case 0:
      return [{ type: 'text', text: 'Writing the note.' }, tool('Write', { file_path: 'bench-note.md', content: '# Bench note\n\nWritten by a scripted model.\n' })];
    case 1:
      return [tool('Read', { file_path: 'README.md' })];
    // biome-ignore lint/suspicious/noFallthroughSwitchClause: without a task id, turn 2 is the summary
    case 2:
      if (taskId) return [tool('mcp__svc__task_comment', { taskId, body: 'progress from the scripted model' })];
    // falls through without a task id
    default:
      return [{ type: 'text', text: 'Done: wrote bench-note.md and noted it on the task.' }];
  }
}

function events(blocks) {
  const out = [
    {
      type: 'message_start',
      message: {
        id: id('msg'),
        type: 'message',
        role: 'assistant',
        model: 'scripted',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      },
    },
  ];
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      out.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      out.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
    } else {
      out.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      out.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
    }
    out.push({ type: 'content_block_stop', index });
  });
  const stop = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  out.push({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } });
  out.push({ type: 'message_stop' });
  return out;
}

const textOf = (content) => (typeof content === 'string' ? content : Array.isArray(content) ? content.map((c) => (c.type === 'text' ? c.text : '')).join('\n') : '');
const TASK_ID = /\(task ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}),/;

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const path = req.url ?? '';
    if (req.method === 'GET' && path === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(stats));
    }
    if (req.method !== 'POST' || !path.startsWith('/v1/messages') || path.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `${req.method} ${path} is not scripted` } }));
    }
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'not JSON' } }));
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    // A request without tools is not the agent's conversation (a title, a summary): one short text.
    const side = !Array.isArray(body.tools) || body.tools.length === 0;
    const turn = side ? 99 : messages.filter((m) => m.role === 'assistant').length;
    const taskId = TASK_ID.exec(messages.map((m) => textOf(m.content)).join('\n'))?.[1] ?? null;
    stats.requests++;
    if (side) stats.sideRequests++;
    else stats.byTurn[turn] = (stats.byTurn[turn] ?? 0) + 1;
    const list = events(turnBlocks(turn, taskId));
    if (body.stream === false) {
      const blocks = turnBlocks(turn, taskId);
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({ ...list[0].message, content: blocks, stop_reason: blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: { input_tokens: 100, output_tokens: 20 } }),
      );
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const tick = () => {
      if (res.destroyed) return;
      const e = list.shift();
      if (!e) return res.end();
      res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
      setTimeout(tick, delayMs);
    };
    tick();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
