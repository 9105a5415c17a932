// Regenerates docs/mcp.md from the agent tool registry (src/tools/). Run with `npm run docs`
// (it builds first); a test fails when the committed copy drifts.
import { writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const { mcpMarkdown } = await import(new URL('dist/src/tools/docs.js', root).href);
writeFileSync(new URL('docs/mcp.md', root), mcpMarkdown());
console.log('wrote docs/mcp.md');
