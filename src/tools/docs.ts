import { TOOLS, toolJsonSchema, type AnyTool } from './index.js';

// docs/mcp.md, generated from the tool registry (`npm run docs`); a test keeps the committed copy current.

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  const?: unknown;
  default?: unknown;
};

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf) return s.anyOf.map(typeOf).join(' \\| ');
  if (s.type === 'array') return `${s.items ? typeOf(s.items) : 'any'}[]`;
  if (Array.isArray(s.type)) return s.type.join(' \\| ');
  return s.type ?? 'any';
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function fieldTable(schema: JsonSchema): string[] {
  const props = Object.entries(schema.properties ?? {});
  if (!props.length) return ['(no fields)', ''];
  const required = new Set(schema.required ?? []);
  const rows = props.map(([name, p]) => {
    const desc = [p.description ?? p.anyOf?.find((a) => a.description)?.description ?? '', p.default !== undefined ? `Default ${JSON.stringify(p.default)}.` : ''].filter(Boolean).join(' ');
    return `| \`${name}\` | ${typeOf(p)} | ${required.has(name) ? 'yes' : 'no'} | ${cell(desc)} |`;
  });
  return ['| field | type | required | description |', '| --- | --- | --- | --- |', ...rows, ''];
}

function hints(t: AnyTool): string {
  const a = t.annotations;
  return [a.readOnlyHint ? 'read-only' : 'writes', a.destructiveHint ? 'destructive' : 'not destructive', a.idempotentHint ? 'idempotent' : 'not idempotent'].join(', ');
}

export function mcpMarkdown(): string {
  const out: string[] = [
    '# Agent tools (MCP)',
    '',
    'Generated from the tool registry in `src/tools/` by `npm run docs`; do not edit by hand.',
    '',
    'svc offers its task board to agent tools (Claude Code, Codex CLI, Cursor, Gemini CLI, opencode…) through the',
    'Model Context Protocol. The same registry is the tool set of the chat orchestrator: one definition per tool.',
    '',
    '## Connecting',
    '',
    '- **HTTP**: `POST /mcp` on the daemon (Streamable HTTP transport, stateless: no `Mcp-Session-Id`, JSON answers;',
    '  `GET` and `DELETE` answer 405). Same bearer keys and Host/Origin guards as the REST API:',
    '  `Authorization: Bearer <key>`. A wrong or missing key is refused with 401 before any tool runs.',
    "- **stdio**: `svc mcp` speaks MCP on stdin/stdout and forwards every message to the project's running daemon",
    '  with the project key (`SERVICE_API_KEY`, else `.svc/local.key`), so `claude mcp add svc -- svc mcp` works with',
    '  no set-up. With no daemon running it says so on stderr and exits 3.',
    '- `svc mcp --print-config claude|codex|cursor|gemini` prints the snippet for that client, pointing at the',
    '  HTTP endpoint with the key read from the `SERVICE_API_KEY` environment variable',
    '  (`export SERVICE_API_KEY="$(cat .svc/local.key)"`).',
    '',
    '| client | file | key from the environment |',
    '| --- | --- | --- |',
    '| Claude Code | `.mcp.json` | `"Authorization": "Bearer ${SERVICE_API_KEY}"` |',
    '| Codex CLI | `~/.codex/config.toml` | `bearer_token_env_var = "SERVICE_API_KEY"` |',
    '| Cursor | `.cursor/mcp.json` | `"Authorization": "Bearer ${env:SERVICE_API_KEY}"` |',
    '| Gemini CLI | `.gemini/settings.json` | `"Authorization": "Bearer ${SERVICE_API_KEY}"` |',
    '',
    '## How it is served',
    '',
    'With the official TypeScript SDK, `@modelcontextprotocol/sdk` 1.x (its v2 split packages were not used; 1.x',
    'runs on Node 20 and accepts zod 4 schemas). Its low-level `Server` answers `initialize` (version negotiation),',
    '`ping`, `tools/list` and every other method, connected once per daemon to a small transport of ours that',
    'carries each HTTP POST as one exchange (request ids are rewritten so clients never collide). `tools/call`, the',
    "hot method, is dispatched straight to the registry: the SDK's Node HTTP transport needs a new Server per",
    'request in stateless mode and its per-call validation costs more than the tool itself; `npm run bench -- mcp`',
    '(`bench/scenarios/mcp.mjs`) measures `task_get` over MCP against `GET /api/v1/tasks/{id}`. Clients use the SDK unchanged (the tests use',
    'its `Client` with `StreamableHTTPClientTransport` and with `StdioClientTransport` spawning `svc mcp`).',
    '',
    '## Read-only keys',
    '',
    'A key in `project.json` may say `"tools": "read"` (`{"name": "viewer", "key": "...", "tools": "read"}`): over',
    'MCP it lists and calls only the tools marked read-only below; any other tool answers a `forbidden` tool error.',
    '`tools` governs the agent tools only; what the key may do on the REST API is unchanged. A key with `grants`',
    '(application databases only) is refused at `/mcp` (403), as on every route that is not a database route.',
    '',
    "## Runs' permission prompts",
    '',
    '`permission_prompt` is not for models: svc starts Claude Code with',
    "`--permission-prompt-tool=mcp__svc__permission_prompt` when an agent's `permissionMode` is `ask`, and Claude Code",
    "calls it, with its run's key, for each tool use it would ask a person about. It is listed to and callable by run",
    'keys only (any other key: `forbidden`), and never offered to the chat orchestrator. The call becomes an approval',
    'of kind `permission` ([approvals.md](approvals.md)) and waits for the decision: its answer is an SSE stream that',
    'opens at once, carries a `notifications/progress` every 20 s (Claude Code gives up on a call silent for 300 s),',
    'and ends with one text block holding `{"behavior":"allow","updatedInput":…}` or',
    '`{"behavior":"deny","message":…}` (no `structuredContent`: Claude Code reads the text). [runs.md](runs.md) has the rest.',
    '',
    '## Results and errors',
    '',
    'A successful call returns `structuredContent` matching the tool output schema and a short summary as text',
    '(clients that understand `structuredContent`, Claude Code among them, give the model the JSON). A refused call is a tool error',
    '(`isError: true`) whose text reads `Error <code> (<status>): <message>` with the codes of',
    '[errors.md](errors.md) (also in `_meta["svc/error"]`); the session goes on. A tool call does what the',
    'equivalent REST call does and emits the same events ([events.md](events.md)).',
    '',
    '## Claims are leases',
    '',
    '`task_next` and `task_claim` answer a `leaseId` and `leaseExpiresAt` (`tasks.leaseSeconds` in project.json,',
    'default 900). `task_heartbeat` extends the lease from now; `task_transition` with `leaseId` is refused',
    '(conflict) when that lease is no longer current. A lease that runs out releases the task: it goes back to',
    '`pending` with no assignee, so any agent can take it, and `task:transition` and `task:lease_expired` are emitted',
    'together. This also happens at start for leases that ran out while the daemon was down.',
    '',
    `## Tools (${TOOLS.length})`,
    '',
    '| tool | what it does | hints |',
    '| --- | --- | --- |',
    ...TOOLS.map((t) => `| [\`${t.name}\`](#${t.name}) | ${cell(t.title)} | ${hints(t)} |`),
    '',
  ];
  for (const t of TOOLS) {
    const input = toolJsonSchema(t.input, 'input') as JsonSchema;
    const output = toolJsonSchema(t.output, 'output') as JsonSchema;
    out.push(`### ${t.name}`, '', `**${t.title}** (${hints(t)})`, '', t.description, '', '**Input**', '', ...fieldTable(input), '**Output**', '', ...fieldTable(output));
    out.push(
      '<details><summary>JSON Schemas</summary>',
      '',
      'Input:',
      '',
      '```json',
      JSON.stringify(input, null, 2),
      '```',
      '',
      'Output:',
      '',
      '```json',
      JSON.stringify(output, null, 2),
      '```',
      '',
      '</details>',
      '',
    );
  }
  return out.join('\n');
}
