import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The agent CLIs svc's tests drive for real (Claude Code and Codex), pinned, installed from the npm
// registry into a cache folder of the repository (.cache/agent-clis/, gitignored): never a
// dependency of the package, so `npm install` for users stays as light as it is. Each CLI carries
// its native binary inside its npm package, so nothing is downloaded from elsewhere.
// `node scripts/agent-clis.mjs` installs what is missing (.ci/run does); tests find them with
// agentCli() in test/agent-clis.ts, which skips (or fails under CI=true) when one is absent.

/** @type {Record<'claude' | 'codex', { pkg: string, version: string, bin: string }>} */
export const AGENT_CLIS = {
  claude: { pkg: '@anthropic-ai/claude-code', version: '2.1.197', bin: 'claude' },
  codex: { pkg: '@openai/codex', version: '0.171.0', bin: 'codex' },
};

const repo = fileURLToPath(new URL('..', import.meta.url));

/** Where the pinned CLIs live: SVC_AGENT_CLIS_DIR, else .cache/agent-clis in the repository. */
export const agentClisDir = () => process.env.SVC_AGENT_CLIS_DIR || join(repo, '.cache', 'agent-clis');

/** The folder of one pinned CLI (its version in the name, so a new pin installs beside the old). */
const folderOf = (/** @type {'claude' | 'codex'} */ name) => join(agentClisDir(), `${name}-${AGENT_CLIS[name].version}`);

/** The pinned CLI's executable, or null when it is not installed. */
export function agentCliPath(/** @type {'claude' | 'codex'} */ name) {
  const path = join(folderOf(name), 'node_modules', '.bin', AGENT_CLIS[name].bin);
  return existsSync(path) && existsSync(join(folderOf(name), 'ready')) ? path : null;
}

/** Installs one pinned CLI unless it is there; throws with npm's output when it cannot. */
export function installAgentCli(/** @type {'claude' | 'codex'} */ name) {
  if (agentCliPath(name)) return agentCliPath(name);
  const { pkg, version } = AGENT_CLIS[name];
  const dir = folderOf(name);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'package.json'), JSON.stringify({ name: `svc-test-${name}`, private: true }));
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--no-save', `${pkg}@${version}`], { cwd: tmp, encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`npm install ${pkg}@${version} failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  writeFileSync(join(tmp, 'ready'), `${pkg}@${version}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return agentCliPath(name);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const name of /** @type {const} */ (['claude', 'codex'])) {
    const path = installAgentCli(name);
    const v = spawnSync(path, ['--version'], { encoding: 'utf8' });
    console.log(`${AGENT_CLIS[name].pkg}@${AGENT_CLIS[name].version}: ${path} (${(v.stdout || v.stderr).trim()})`);
  }
}
