// Builds the web board (web/) into dist/board: one bundled, minified script (esbuild) and the
// static files beside it. The daemon serves dist/board (src/resources/board/assets.ts).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = `${root}dist/board`;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [`${root}web/src/main.ts`],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  outfile: `${out}/app.js`,
  legalComments: 'none',
  logLevel: 'warning',
});
await build({ entryPoints: [`${root}web/app.css`], minify: true, outfile: `${out}/app.css`, logLevel: 'warning' });
for (const f of ['index.html', 'icon.svg']) copyFileSync(`${root}web/${f}`, `${out}/${f}`);
