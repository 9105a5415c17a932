import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { UsageError } from './context.js';

/** A JSON or YAML file given on the command line (by extension; .json is JSON, anything else YAML, a superset). */
export function readDataFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new UsageError(`${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
}
