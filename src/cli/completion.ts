import { Argument, Command, Option } from 'commander';
import { localAction } from './action.js';
import { cliContext, UsageError } from './context.js';
import { shortId } from '../lib/human.js';
import { out } from './output.js';

// `svc completion bash|zsh|fish`: a completion script generated from the command tree (every
// command, subcommand and option), so it never drifts from the CLI. Where an argument names a task,
// mission, approval, agent or skill, the script asks `svc completion --names KIND`, which lists
// them from the running daemon (one request, 1 s at most; nothing when no daemon answers).

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

export const NAME_KINDS = ['tasks', 'missions', 'approvals', 'agents', 'skills'] as const;
type NameKind = (typeof NAME_KINDS)[number];

interface Node {
  /** Words after `svc`, e.g. "tasks show". */
  path: string;
  summary: string;
  subs: { name: string; summary: string }[];
  options: { flags: string[]; summary: string; takesValue: boolean }[];
  /** What the first positional argument names, when the daemon can list it. */
  kind: NameKind | null;
}

/** Which names an argument takes, from its group and its name (<id>, <name>, <agent>, <skill>). */
function kindOf(path: string[], arg: string | undefined): NameKind | null {
  // `add <name>` names something new: nothing to complete from the daemon.
  if (!arg || path.at(-1) === 'add') return null;
  const group = path[0];
  if (/^(skill)$/.test(arg) || (group === 'skills' && arg === 'name')) return 'skills';
  if (/^(agent)$/.test(arg) || (group === 'agents' && arg === 'name')) return 'agents';
  if (/id$/i.test(arg)) {
    if (group === 'missions') return 'missions';
    if (group === 'approvals') return 'approvals';
    return 'tasks';
  }
  return null;
}

const isHidden = (c: Command): boolean => Boolean((c as unknown as { _hidden?: boolean })._hidden);

/** Flattens the tree: one node per command, global options included in each. */
export function commandTree(program: Command): Node[] {
  const nodes: Node[] = [];
  const globals = program.options.filter((o) => !o.hidden);
  const walk = (cmd: Command, path: string[]) => {
    const opts = [...cmd.options, ...(path.length ? globals : []), new Option('-h, --help')].filter((o) => !o.hidden);
    nodes.push({
      path: path.join(' '),
      summary: cmd.description(),
      subs: cmd.commands.filter((c) => !isHidden(c)).map((c) => ({ name: c.name(), summary: c.description() })),
      options: opts.map((o) => ({ flags: [o.long, o.short].filter((f): f is string => Boolean(f)), summary: o.description, takesValue: o.required || o.optional })),
      kind: kindOf(path, cmd.registeredArguments[0]?.name()),
    });
    for (const c of cmd.commands) if (!isHidden(c)) walk(c, [...path, c.name()]);
  };
  walk(program, []);
  return nodes;
}

const words = (n: Node) => ({ subs: n.subs.map((s) => s.name).join(' '), opts: n.options.flatMap((o) => o.flags).join(' ') });

/** The table the bash and zsh scripts look paths up in: `path) echo 'subs|options|kind'`. */
function treeFunction(nodes: Node[]): string {
  const cases = nodes.map((n) => {
    const w = words(n);
    return `    '${n.path}') echo '${w.subs}|${w.opts}|${n.kind ?? ''}' ;;`;
  });
  return ['_svc_tree() {', '  case "$1" in', ...cases, '  esac', '}'].join('\n');
}

function bash(nodes: Node[]): string {
  return `# svc completion for bash, generated from the command tree by \`svc completion bash\`.
# Install: mkdir -p ~/.local/share/bash-completion/completions
#          svc completion bash > ~/.local/share/bash-completion/completions/svc
#      or: echo 'source <(svc completion bash)' >> ~/.bashrc
${treeFunction(nodes)}

_svc() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmdpath="" next w i spec subs rest opts kind
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    next="\${cmdpath:+$cmdpath }$w"
    [[ -n "$(_svc_tree "$next")" ]] && cmdpath="$next"
  done
  spec="$(_svc_tree "$cmdpath")"
  subs="\${spec%%|*}"; rest="\${spec#*|}"; opts="\${rest%%|*}"; kind="\${rest#*|}"
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  local candidates="$subs"
  [[ -n "$kind" ]] && candidates="$candidates $(svc completion --names "$kind" 2>/dev/null)"
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -o default -F _svc svc
`;
}

function zsh(nodes: Node[]): string {
  return `#compdef svc
# svc completion for zsh, generated from the command tree by \`svc completion zsh\`.
# Install: svc completion zsh > "\${fpath[1]}/_svc"   (then start a new shell)
#      or: echo 'source <(svc completion zsh)' >> ~/.zshrc   (after compinit)
${treeFunction(nodes)}

_svc() {
  local cmdpath="" next w i spec subs rest opts kind
  local -a names
  for ((i = 2; i < CURRENT; i++)); do
    w="\${words[i]}"
    [[ "$w" == -* ]] && continue
    next="\${cmdpath:+$cmdpath }$w"
    [[ -n "$(_svc_tree "$next")" ]] && cmdpath="$next"
  done
  spec="$(_svc_tree "$cmdpath")"
  subs="\${spec%%|*}"; rest="\${spec#*|}"; opts="\${rest%%|*}"; kind="\${rest#*|}"
  if [[ "$PREFIX" == -* ]]; then
    compadd -- \${=opts}
    return
  fi
  [[ -n "$kind" ]] && names=(\${(f)"$(svc completion --names "$kind" 2>/dev/null)"})
  compadd -- \${=subs} $names
  _files
}

if [[ "$funcstack[1]" == "_svc" ]]; then _svc "$@"; else compdef _svc svc; fi
`;
}

const fishQuote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function fish(nodes: Node[]): string {
  const lines = [
    '# svc completion for fish, generated from the command tree by `svc completion fish`.',
    '# Install: mkdir -p ~/.config/fish/completions && svc completion fish > ~/.config/fish/completions/svc.fish',
    '',
    '# The words after `svc` that are not options, joined by spaces: the command being typed.',
    'function __svc_path',
    '    set -l tokens (commandline -opc)',
    '    set -e tokens[1]',
    "    string join ' ' (string match -v -- '-*' $tokens)",
    'end',
    'function __svc_is',
    '    set -l p (__svc_path)',
    '    test "$p" = "$argv[1]"',
    'end',
    '',
    'complete -c svc -f',
  ];
  for (const n of nodes) {
    const cond = `__svc_is ${fishQuote(n.path)}`;
    for (const s of n.subs) lines.push(`complete -c svc -n ${fishQuote(cond)} -a ${fishQuote(s.name)} -d ${fishQuote(s.summary)}`);
    for (const o of n.options) {
      const long = o.flags.find((f) => f.startsWith('--'))?.slice(2);
      const short = o.flags.find((f) => /^-[^-]$/.test(f))?.slice(1);
      const parts = [`complete -c svc -n ${fishQuote(cond)}`];
      if (long) parts.push(`-l ${long}`);
      if (short) parts.push(`-s ${short}`);
      if (o.takesValue) parts.push('-r');
      parts.push(`-d ${fishQuote(o.summary)}`);
      lines.push(parts.join(' '));
    }
    if (n.kind) lines.push(`complete -c svc -n ${fishQuote(cond)} -a ${fishQuote(`(svc completion --names ${n.kind} 2>/dev/null)`)}`);
  }
  return lines.join('\n') + '\n';
}

export function completionScript(shell: Shell, program: Command): string {
  const nodes = commandTree(program);
  return shell === 'bash' ? bash(nodes) : shell === 'zsh' ? zsh(nodes) : fish(nodes);
}

/** The names the daemon knows of a kind, one per line: short ids for tasks, missions and approvals. */
async function names(cmd: Command, kind: NameKind): Promise<string[]> {
  const client = cliContext(cmd).client;
  const short = (rows: { id: string }[]) => rows.map((r) => shortId(r.id)!);
  switch (kind) {
    case 'tasks':
      return short(await client.get<{ id: string }[]>('/api/v1/tasks', { limit: 200 }));
    case 'missions':
      return short(await client.get<{ id: string }[]>('/api/v1/missions', { limit: 200 }));
    case 'approvals':
      return short(await client.get<{ id: string }[]>('/api/v1/approvals', { status: 'pending', limit: 200 }));
    case 'agents':
      return (await client.get<{ name: string }[]>('/api/v1/agents')).map((a) => a.name);
    case 'skills':
      return (await client.get<{ name: string }[]>('/api/v1/skills')).map((s) => s.name);
  }
}

export function completionCommand(): Command {
  const cmd: Command = new Command('completion')
    .description('Print a shell completion script: svc completion bash|zsh|fish (see the README to install it)')
    .addArgument(new Argument('[shell]', 'the shell').choices([...SHELLS]))
    .addOption(new Option('--names <kind>', 'list the names the daemon knows of a kind (used by the scripts)').choices([...NAME_KINDS]).hideHelp())
    .action(
      localAction(async (_g, shell: Shell | undefined, o: { names?: NameKind }) => {
        if (o.names) {
          // Completion must never hang the shell or print errors into it: any failure lists nothing.
          const list = await Promise.race([names(cmd, o.names).catch(() => []), new Promise<string[]>((r) => setTimeout(() => r([]), 1000).unref())]);
          if (list.length) out(list.join('\n') + '\n');
          return;
        }
        if (!shell) throw new UsageError('which shell? svc completion bash|zsh|fish');
        let root = cmd.parent!;
        while (root.parent) root = root.parent;
        out(completionScript(shell, root));
      }),
    );
  return cmd;
}
