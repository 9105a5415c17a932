import { Command } from 'commander';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliDetails, cliText, commandWords, fills, useEndpointWords } from '../../src/cli/api-words.js';
import { COMMANDS, ENDPOINT_WORDS } from '../../src/cli/commands.js';

// The CLI's root gives the words at each run (run.ts); these tests call the plumbing directly.
beforeAll(() => useEndpointWords(ENDPOINT_WORDS));

// The API's words for a CLI user: fields become the flags and arguments that fill them, endpoints
// the commands that do the same.

const ENDPOINT_RE = /\b(GET|POST|PUT|PATCH|DELETE) (\/(?:api\/)?v1(?:\/[\w{}%:-]+)*)(?: (\{[^{}]*\}))?/g;

/** Every endpoint the server's own text names (route definitions, docs and the CLI aside), comments left out. */
function endpointMentions(): { file: string; mention: string }[] {
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.ts') ? [join(d, e.name)] : []));
  const out: { file: string; mention: string }[] = [];
  for (const file of walk('src')) {
    if (/(routes|openapi|docs|command)\.ts$|^src\/(cli|client)\//.test(file)) continue;
    const code = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|\s)\/\/.*$/gm, '$1')
      // What a template literal puts in (an id) reads as an id would.
      .replace(/\$\{[^}]*\}/g, 'x');
    for (const m of code.matchAll(ENDPOINT_RE)) out.push({ file, mention: m[0] });
  }
  return out;
}

describe('the API in the command line’s words', () => {
  it('every endpoint the server names in its text has a command to say instead', () => {
    const mentions = endpointMentions();
    // The ones this was written for, so that the scan is known to see them.
    expect(mentions.map((m) => m.mention)).toEqual(expect.arrayContaining(['POST /api/v1/data/{resource}/migrations', 'GET /v1/events/catalog', 'GET /api/v1/auth/status']));
    for (const { file, mention } of mentions) expect(commandWords(mention), `${file}: ${mention}`).toMatch(/^`svc /);
  });

  it('and every command it says exists', async () => {
    const said = new Set<string>();
    for (const { mention } of endpointMentions()) said.add(/^`(svc(?: [a-z-]+)+)/.exec(commandWords(mention))![1]!);
    for (const words of said) {
      const [, group, sub] = words.split(' ');
      const entry = COMMANDS.find((c) => c.name === group);
      expect(entry, words).toBeDefined();
      if (sub && !sub.startsWith('<'))
        expect(
          (await entry!.load()).commands.map((c) => c.name()),
          words,
        ).toContain(sub);
    }
  });

  it.each([
    ['a template stays a placeholder', 'schema changes go through POST /api/v1/data/{resource}/migrations.', 'schema changes go through `svc db migrate <name> <file>`.'],
    [
      'an id in the path is put in',
      'Webhook 0193ab is disabled (by hand); enable it first with PATCH /v1/webhooks/0193ab {"enabled": true}.',
      'Webhook 0193ab is disabled (by hand); enable it first with `svc webhooks set 0193ab --enable`.',
    ],
    ['an id in the body is put in', 'Request one with POST /api/v1/approvals {"taskId": "t-1", "requestedBy", "title"}.', 'Request one with `svc approvals request t-1 --title …`.'],
    ['a value that needs quoting is quoted', 'create it with POST /api/v1/agents/teams {"name": "core team"}', "create it with `svc teams add 'core team'`"],
    ['the end of a sentence is not part of the path', 'see GET /api/v1/auth/status.', 'see `svc auth status`.'],
    ['a body the command does not fit leaves the endpoint', 'PATCH /v1/webhooks/0193ab {"enabled": false}', 'PATCH /v1/webhooks/0193ab {"enabled": false}'],
    ['an endpoint no command calls stays', 'GET /api/v1/nothing', 'GET /api/v1/nothing'],
  ])('endpoints: %s', (_, api, cli) => {
    expect(commandWords(api)).toBe(cli);
  });

  const cmd = () => {
    const c = new Command('query').argument('<name>').argument('[sql]').option('--max-rows <n>').option('--write').option('--param <v>');
    return fills(c, { 'body.mode': { as: '--write', values: { write: 'with --write', read: 'without --write' } }, 'body.params': '--param/--param-json', 'params.resource': '<name>' });
  };

  it.each([
    ['an option named after the field', 'body.maxRows', '--max-rows'],
    ['an option that fills a field of another name', 'body.mode', '--write'],
    ['a repeatable option’s n-th value', 'body.params.2', '--param/--param-json (the 3rd)'],
    ['an argument', 'body.sql', '[sql]'],
    ['a path parameter', 'params.resource', '<name>'],
    ['a query field', 'query.maxRows', '--max-rows'],
    ['a field nothing fills', 'body.other', 'body.other'],
  ])('detail paths: %s', (_, path, typed) => {
    expect(cliDetails([{ path, message: 'm' }], cmd())).toEqual([{ path: typed, message: 'm' }]);
  });

  it.each([
    ['a value phrase', 'INSERT writes; send it with mode "write".', 'INSERT writes; send it with --write.'],
    ['the other value', 'A SELECT does not write; send it with mode "read" (the default).', 'A SELECT does not write; send it without --write (the default).'],
    ['a camelCase field name', 'The result exceeds 1 MiB; select fewer rows or columns (maxRows).', 'The result exceeds 1 MiB; select fewer rows or columns (--max-rows).'],
    ['a path in prose', 'body.params.0 must be a string', '--param/--param-json (the 1st) must be a string'],
    ['a lowercase name is a word', 'read mode runs only statements that cannot write', 'read mode runs only statements that cannot write'],
    ['a config key is not a field', 'past data.maxRows', 'past data.maxRows'],
  ])('messages: %s', (_, api, cli) => {
    expect(cliText(api, cmd())).toBe(cli);
  });

  it('a file that is the whole body: its paths are the file’s', () => {
    const c = fills(new Command('tx').argument('<name>').argument('<file>'), { body: '<file>' });
    expect(cliDetails([{ path: 'body.operations.3.values.total', message: 'm' }], c)[0]!.path).toBe('<file> operations.3.values.total');
  });
});
