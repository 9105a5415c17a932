import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import ts from 'typescript';

// The daemon's and the CLI's own sources, parsed with the TypeScript compiler: what the layer and
// clock tests read. Paths are relative to the repository, with forward slashes (src/kernel/errors.ts).

export const REPO = resolve(__dirname, '..');

/** Every .ts file under src/ and bin/ (declaration files included). */
export function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(REPO, dir), { withFileTypes: true })) {
      const p = posix.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) out.push(p);
    }
  };
  walk('src');
  walk('bin');
  return out.sort();
}

const parsed = new Map<string, ts.SourceFile>();

export function parse(file: string): ts.SourceFile {
  let sf = parsed.get(file);
  if (!sf) parsed.set(file, (sf = ts.createSourceFile(file, readFileSync(join(REPO, file), 'utf8'), ts.ScriptTarget.ES2022, true)));
  return sf;
}

/** Calls `visit` on every node of the file, comments and JSDoc excepted. */
export function walkNodes(sf: ts.SourceFile, visit: (node: ts.Node) => void): void {
  const go = (n: ts.Node) => {
    visit(n);
    ts.forEachChild(n, go);
  };
  go(sf);
}

export type ImportKind = 'value' | 'type' | 'dynamic';

export interface Import {
  from: string;
  to: string;
  kind: ImportKind;
  line: number;
}

/**
 * The file's imports of other files of the repository: import and export…from declarations
 * (`import type` included), import() calls and import('…') types. Packages and node: modules are
 * not followed.
 */
export function importsOf(file: string): Import[] {
  const sf = parse(file);
  const out: Import[] = [];
  const add = (spec: ts.Node | undefined, kind: ImportKind, at: ts.Node) => {
    if (!spec || !ts.isStringLiteralLike(spec) || !spec.text.startsWith('.')) return;
    const to = relative(REPO, resolve(REPO, dirname(file), spec.text))
      .split('\\')
      .join('/')
      .replace(/\.js$/, '.ts');
    out.push({ from: file, to, kind, line: sf.getLineAndCharacterOfPosition(at.getStart(sf)).line + 1 });
  };
  walkNodes(sf, (n) => {
    if (ts.isImportDeclaration(n)) {
      const typeOnly =
        n.importClause?.isTypeOnly ||
        (n.importClause?.namedBindings &&
          ts.isNamedImports(n.importClause.namedBindings) &&
          !n.importClause.name &&
          n.importClause.namedBindings.elements.length > 0 &&
          n.importClause.namedBindings.elements.every((e) => e.isTypeOnly));
      add(n.moduleSpecifier, typeOnly ? 'type' : 'value', n);
    } else if (ts.isExportDeclaration(n)) {
      add(n.moduleSpecifier, n.isTypeOnly ? 'type' : 'value', n);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(n.arguments[0], 'dynamic', n);
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) {
      add(n.argument.literal, 'type', n);
    }
  });
  return out;
}
