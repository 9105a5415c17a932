import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from './context.js';
import { io } from './io.js';

/**
 * A JSON or YAML file given on the command line (by extension; .json is JSON, anything else YAML,
 * a superset). The YAML parser is loaded only when a YAML file is read.
 */
export async function readDataFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = readFileSync(resolve(io().cwd, path), 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const json = /\.json$/i.test(path);
  try {
    return json ? JSON.parse(text) : (await import('yaml')).parse(text);
  } catch (err) {
    throw new UsageError(`${path} is not valid ${json ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
}
