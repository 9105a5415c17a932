// Regenerates docs/openapi.json, docs/configuration.md and docs/events.md from the route list, the
// project.json schema and the event registry.
// Run with `npm run docs` (it builds first); tests fail when the committed copies drift.
import { writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const { loadApi } = await import(new URL('dist/src/routes.js', root).href);
const { openApiDocument } = await loadApi();
const { formatJson } = await import(new URL('dist/src/lib/format-json.js', root).href);
writeFileSync(new URL('docs/openapi.json', root), formatJson(openApiDocument()));

const events = await import(new URL('dist/src/events/docs.js', root).href).catch(() => null);
if (events) writeFileSync(new URL('docs/events.md', root), events.eventsMarkdown());
const { configurationMarkdown } = await import(new URL('dist/src/config/docs.js', root).href);
writeFileSync(new URL('docs/configuration.md', root), configurationMarkdown());
console.log('wrote docs/openapi.json, docs/configuration.md' + (events ? ' and docs/events.md' : ''));
