// Finds promises nobody waits for in src/ (typescript-eslint's no-floating-promises and
// no-misused-promises, on the TypeScript compiler that is already a dependency): with the state
// asynchronous, a store call without `await` is a write that may land after its transaction, or
// an error nobody hears. Run by test/unit/promises.test.ts; `node scripts/check-promises.mjs`
// prints the findings, one `file:line: what` per line.
//
// - a statement that is a promise (a call...) not awaited, kept (assigned), handled (.catch(f),
//   .then(f, g)) or marked `void` (deliberately not waited for: its rejection must be handled where it is made);
// - an async function (or any function returning a promise) given where a function returning
//   void is expected: a callback of setTimeout, an event listener, forEach, a hook typed `=> void`.
import ts from 'typescript';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The findings, as `src/file.ts:line: what`. */
export function checkPromises(configFile = resolve(root, 'tsconfig.json'), under = 'src/') {
  const cfg = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  const program = ts.createProgram({ rootNames: cfg.fileNames, options: { ...cfg.options, noEmit: true } });
  const checker = program.getTypeChecker();
  const found = [];

  const isThenable = (type) => {
    if (!type) return false;
    if (type.isUnion()) return type.types.some(isThenable);
    const then = type.getProperty('then');
    if (!then) return false;
    const t = checker.getTypeOfSymbolAtLocation(then, then.valueDeclaration ?? then.declarations?.[0]);
    return t.getCallSignatures().length > 0;
  };
  const returnsPromise = (type) => type.getCallSignatures().some((s) => isThenable(s.getReturnType()));
  /** A function type every signature of which returns void (not Promise, any or unknown). */
  const wantsVoid = (type) => {
    if (!type) return false;
    const types = type.isUnion() ? type.types : [type];
    const sigs = types.flatMap((t) => t.getCallSignatures());
    return sigs.length > 0 && sigs.every((s) => (s.getReturnType().flags & ts.TypeFlags.Void) !== 0);
  };
  const at = (sf, node, what) => {
    const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    found.push(`${relative(root, sf.fileName)}:${line + 1}: ${what}`);
  };

  for (const sf of program.getSourceFiles()) {
    if (sf.isDeclarationFile || !relative(root, sf.fileName).startsWith(under)) continue;
    const visit = (node) => {
      if (ts.isExpressionStatement(node)) {
        let e = node.expression;
        while (ts.isParenthesizedExpression(e)) e = e.expression;
        // Kept to be waited for later (an assignment), or with its rejection handled (.catch(f), .then(f, g)).
        const kept = ts.isBinaryExpression(e) && [ts.SyntaxKind.EqualsToken, ts.SyntaxKind.QuestionQuestionEqualsToken, ts.SyntaxKind.BarBarEqualsToken].includes(e.operatorToken.kind);
        const handled =
          ts.isCallExpression(e) &&
          ts.isPropertyAccessExpression(e.expression) &&
          ((e.expression.name.text === 'catch' && e.arguments.length > 0) || (e.expression.name.text === 'then' && e.arguments.length > 1));
        const voided = ts.isVoidExpression(e) || ts.isAwaitExpression(e) || kept || handled;
        if (!voided && isThenable(checker.getTypeAtLocation(e))) at(sf, node, `a promise nobody waits for: ${e.getText(sf).slice(0, 80)}`);
      }
      if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
        const sig = checker.getSignatureFromDeclaration(node);
        if (sig && isThenable(sig.getReturnType()) && wantsVoid(checker.getContextualType(node))) {
          at(sf, node, 'a function returning a promise where one returning void is expected (its rejection would go unheard)');
        }
      }
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const sig = checker.getResolvedSignature(node);
        (node.arguments ?? []).forEach((arg, i) => {
          if (ts.isArrowFunction(arg) || ts.isFunctionExpression(arg) || !sig) return;
          const param = sig.parameters[Math.min(i, sig.parameters.length - 1)];
          if (!param) return;
          const want = checker.getTypeOfSymbolAtLocation(param, node);
          if (wantsVoid(want) && returnsPromise(checker.getTypeAtLocation(arg))) at(sf, arg, `${arg.getText(sf).slice(0, 60)} returns a promise where a function returning void is expected`);
        });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const found = checkPromises();
  for (const f of found) console.log(f);
  process.exitCode = found.length ? 1 : 0;
}
