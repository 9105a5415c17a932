import { execFileSync } from 'node:child_process';
import { makeProject } from './harness.js';

// A project that is a git repository with one commit, for the runner's tests (each task gets a worktree).

export const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd, encoding: 'utf8' }).trim();

/** `ignore`: more lines for its .gitignore (files a test writes into the project and does not want committed). */
export function gitProject(config: Record<string, unknown> = {}, ignore: string[] = []): string {
  const root = makeProject(config, { 'README.md': '# test project\n', '.gitignore': ['.svc/', '.user-config/', ...ignore].join('\n') + '\n' });
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return root;
}
