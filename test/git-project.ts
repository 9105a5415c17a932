import { execFileSync } from 'node:child_process';
import { makeProject } from './harness.js';

// A project that is a git repository with one commit: what the runner's tests run agents in.

export const git = (cwd: string, ...args: string[]): string => execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd, encoding: 'utf8' }).trim();

export function gitProject(config: Record<string, unknown> = {}): string {
  const root = makeProject(config, { 'README.md': '# test project\n', '.gitignore': '.svc/\n.user-config/\n' });
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return root;
}
