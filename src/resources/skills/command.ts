import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { action, collect } from '../../cli/action.js';
import { fills } from '../../cli/api-words.js';
import { confirm } from '../../cli/confirm.js';
import { UsageError } from '../../cli/context.js';
import { io } from '../../cli/io.js';
import { emit, keyValues, table } from '../../cli/output.js';
import { check } from '../../cli/validate.js';
import { seg } from '../../client/client.js';
import type { Skill, SkillDetail } from './schema.js';

/** The API's schemas, loaded when an option needs checking (they bring zod). */
const schemas = () => import('./schema.js');

async function readBody(o: { file?: string; content?: string }): Promise<string> {
  if ((o.file === undefined) === (o.content === undefined)) throw new UsageError('give the body with exactly one of --file FILE or --content TEXT');
  if (o.content !== undefined) return o.content;
  try {
    if (o.file === '-') {
      let text = '';
      for await (const chunk of io().stdin) text += String(chunk);
      return text;
    }
    return readFileSync(resolve(io().cwd, o.file!), 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${o.file}: ${(err as Error).message}`);
  }
}

export function skillsCommand(): Command {
  const cmd = new Command('skills').description('Manage skills (folders with a SKILL.md) and assign them to agents');

  cmd
    .command('ls')
    .description('List skills')
    .action(
      action(async (ctx) => {
        const skills = await ctx.client.get<Skill[]>('/api/v1/skills');
        emit(ctx.json, skills, () =>
          table(
            skills,
            [
              { header: 'NAME', value: (s) => s.name },
              { header: 'DESCRIPTION', value: (s) => s.description },
              { header: 'ASSIGNED TO', value: (s) => s.assignedTo },
              { header: 'ERROR', value: (s) => s.error },
            ],
            'no skills; add one with `svc skills add <name> --description D --file SKILL_BODY.md`',
          ),
        );
      }),
    );

  cmd
    .command('show <name>')
    .description('Show a skill and its body')
    .action(
      action(async (ctx, name: string) => {
        const s = await ctx.client.get<SkillDetail>(`/api/v1/skills/${seg(name)}`);
        emit(ctx.json, s, () => {
          const { content, frontMatter: _fm, ...meta } = s;
          return `${keyValues(meta)}\n${content}${content.endsWith('\n') ? '' : '\n'}`;
        });
      }),
    );

  fills(cmd.command('add <name>'), { 'body.content': '--file/--content', 'body.allowedTools': '--tool' })
    .description('Write a new skill folder: <skillsDir>/<name>/SKILL.md')
    .requiredOption('-d, --description <text>', 'when to use the skill')
    .option('--file <path>', 'the Markdown body, from a file ("-" for stdin)')
    .option('--content <text>', 'the Markdown body, inline')
    .option('--tool <name>', 'allowed tool (repeatable)', collect)
    .action(
      action(async (ctx, name: string, o: { description: string; file?: string; content?: string; tool?: string[] }) => {
        const body = { name, description: o.description, content: await readBody(o), ...(o.tool ? { allowedTools: o.tool } : {}) };
        await check(schemas, 'SkillIn', body);
        const s = await ctx.client.post<SkillDetail>('/api/v1/skills', body);
        emit(ctx.json, s, () => `created skill ${s.name} at ${s.path}\n`);
      }),
    );

  cmd
    .command('rm <name>')
    .description('Remove a skill folder (and unassign it from every agent)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(
      action(async (ctx, name: string) => {
        await confirm(`remove skill ${name} (its folder is deleted)?`, ctx.yes, `svc skills rm ${name}`);
        const r = await ctx.client.delete<{ removed: true }>(`/api/v1/skills/${seg(name)}`);
        emit(ctx.json, r, () => `removed skill ${name}\n`);
      }),
    );

  for (const verb of ['assign', 'unassign'] as const) {
    cmd
      .command(`${verb} <skill> <agent>`)
      .description(verb === 'assign' ? 'Assign a skill to an agent' : 'Unassign a skill from an agent')
      .action(
        action(async (ctx, skill: string, agent: string) => {
          await check(schemas, 'SkillAgentIn', { agent });
          const r = await ctx.client.post<{ skill: string; agent: string }>(`/api/v1/skills/${seg(skill)}/${verb}`, { agent });
          emit(ctx.json, r, () => `${verb === 'assign' ? 'assigned' : 'unassigned'} skill ${r.skill} ${verb === 'assign' ? 'to' : 'from'} ${r.agent}\n`);
        }),
      );
  }

  return cmd;
}
