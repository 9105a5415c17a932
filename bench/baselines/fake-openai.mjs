// A fake OpenAI-compatible upstream for the chat scenario: answers /v1/chat/completions at once,
// plainly or as a short stream. It is both what svc calls and the baseline (called directly), so
// the difference between the two is what the daemon adds. Prints {"port":N} when listening.
import { createServer } from 'node:http';

const plain = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: 'm1',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const streamed = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'ok' }) + chunk({}, 'stop') + 'data: [DONE]\n\n';

const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    let stream = false;
    try {
      stream = JSON.parse(raw).stream === true;
    } catch {
      // treated as plain
    }
    if (stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(streamed);
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(plain) });
      res.end(plain);
    }
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
