import { Command } from 'commander';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createInterface } from 'node:readline';
import { action } from '../../cli/action.js';
import { UsageError, type CliContext } from '../../cli/context.js';
import { io } from '../../cli/io.js';
import { err, out, style } from '../../cli/output.js';
import { ApiError, UnreachableError } from '../../client/client.js';
import { sseReader } from '../../lib/sse-read.js';

/**
 * One streamed chat turn: prints the answer's text as it arrives and resolves with the session id
 * the daemon gave it. Failures (OpenAI-shaped bodies) become ApiError, so they print and exit
 * like every other API error.
 */
function streamTurn(ctx: CliContext, body: Record<string, unknown>, sessionId: string | null, print: (text: string) => void): Promise<string | null> {
  const u = new URL(`${ctx.client.url}/v1/chat/completions`);
  const text = JSON.stringify({ ...body, stream: true });
  const headers = ctx.client.headers({
    'content-type': 'application/json',
    accept: 'text/event-stream',
    'content-length': String(Buffer.byteLength(text)),
    ...(sessionId ? { 'x-session-id': sessionId } : {}),
  });
  return new Promise((resolve, reject) => {
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, { method: 'POST', headers }, (res) => {
      const session = (res.headers['x-session-id'] as string | undefined) ?? sessionId;
      if ((res.statusCode ?? 0) >= 400) {
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (buffered += c));
        res.on('end', () => {
          try {
            const e = (JSON.parse(buffered) as { error: { message: string; code: string } }).error;
            reject(new ApiError(res.statusCode ?? 0, e.code, e.message));
          } catch {
            reject(new ApiError(res.statusCode ?? 0, 'unknown', `HTTP ${res.statusCode}`));
          }
        });
        return;
      }
      let failure: Error | null = null;
      // Bytes, not text: the shared reader decodes them, holding a character cut between chunks.
      const reader = sseReader(({ data }) => {
        if (data === '[DONE]') return;
        try {
          const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; error?: { message: string; code: string } };
          if (chunk.error) failure = new ApiError(502, chunk.error.code, chunk.error.message);
          const piece = chunk.choices?.[0]?.delta?.content;
          if (piece) print(piece);
        } catch {
          // not a chunk: ignored
        }
      });
      res.on('data', (c: Buffer) => {
        try {
          reader.push(c);
        } catch (e) {
          // An oversized frame: the answer is abandoned, and said so.
          reject(e as Error);
          res.destroy();
        }
      });
      res.on('end', () => (failure ? reject(failure) : resolve(session)));
      res.on('error', (e) => reject(new UnreachableError(ctx.client.url, e)));
    });
    req.on('error', (e) => reject(new UnreachableError(ctx.client.url, e)));
    req.end(text);
  });
}

export function chatCommand(): Command {
  return new Command('chat')
    .description('Talk to an agent, or to the orchestrator that manages the project with its tools; streamed as it arrives')
    .argument('[message...]', 'what to say; without it, an interactive prompt that keeps the session')
    .option('--agent <name>', 'the agent to talk to (default: the orchestrator)')
    .option('--model <provider/model>', 'the model, where the agent or project.json names none')
    .option('--session <id>', 'continue this session (the x-session-id of an earlier answer)')
    .addHelpText(
      'after',
      '\nExamples:\n  svc chat "what is left to do on the release?"\n  svc chat --agent alice "review the parser"\n  svc chat --agent alice          # a conversation; Ctrl-C or Ctrl-D ends it\n',
    )
    .action(
      action(async (ctx, words: string[], o: { agent?: string; model?: string; session?: string }) => {
        const base = { model: o.model ?? 'svc', ...(o.agent ? { agent: o.agent } : {}) };
        let session = o.session ?? null;
        const message = words.join(' ').trim();
        if (message) {
          if (ctx.json) {
            let text = '';
            session = await streamTurn(ctx, { ...base, messages: [{ role: 'user', content: message }] }, session, (t) => (text += t));
            out(JSON.stringify({ sessionId: session, content: text }, null, 2) + '\n');
            return;
          }
          session = await streamTurn(ctx, { ...base, messages: [{ role: 'user', content: message }] }, session, out);
          out('\n');
          if (session) err(style.dim(`session ${session}: continue with --session ${session}\n`));
          return;
        }
        const { stdin, stdout, interactive } = io();
        if (!interactive) throw new UsageError('svc chat needs a message when it is not run in a terminal', 'pass the message as an argument: svc chat "…"');
        if (ctx.json) throw new UsageError('--json needs a message', 'pass the message as an argument');
        const rl = createInterface({ input: stdin, output: stdout as NodeJS.WritableStream, prompt: style.bold('you> ') });
        err(style.dim(`talking to ${o.agent ?? 'the orchestrator'}; Ctrl-C or Ctrl-D to end\n`));
        rl.prompt();
        for await (const line of rl) {
          const text = line.trim();
          if (text) {
            try {
              session = await streamTurn(ctx, { ...base, messages: [{ role: 'user', content: text }] }, session, out);
              out('\n');
            } catch (e) {
              if (e instanceof ApiError) err(`${style.red('error')} ${e.code} (${e.status}): ${e.message}\n`);
              else throw e;
            }
          }
          rl.prompt();
        }
        if (session) err(style.dim(`\nsession ${session}\n`));
      }),
    );
}
