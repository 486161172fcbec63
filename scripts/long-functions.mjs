#!/usr/bin/env node
// Lists the functions longer than one screen (default 50 lines, signature to closing brace) in
// the given folders' TypeScript, longest first; tests, contract suites, test helpers and
// generated code are left out. Exits 1 when it lists any, so it can guard a folder.
//
//   node scripts/long-functions.mjs [--max 50] [folder ...]   (default: services packages/core)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const args = process.argv.slice(2);
const maxIndex = args.indexOf('--max');
const max = maxIndex >= 0 ? Number(args[maxIndex + 1]) : 50;
const folders = maxIndex >= 0 ? args.filter((_, i) => i !== maxIndex && i !== maxIndex + 1) : args;
const roots = folders.length > 0 ? folders : ['services', 'packages/core'];

const SKIPPED =
  /(\.spec\.ts|\.contract\.ts|\.contract-support\.ts|\.d\.ts)$|\/(testing|node_modules|dist|gen)\//;

const files = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : files(path);
    return path.endsWith('.ts') && !SKIPPED.test(`/${path}`) ? [path] : [];
  });

const nameOf = (node) => {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  return '(anonymous)';
};

const long = [];
for (const file of roots.flatMap(files)) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > max) long.push({ lines, where: `${relative('.', file)}:${start + 1}`, name: nameOf(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
long.sort((a, b) => b.lines - a.lines);
for (const { lines, where, name } of long) console.log(`${String(lines).padStart(4)}  ${where}  ${name}`);
if (long.length > 0) process.exit(1);
console.log(`no function over ${max} lines in ${roots.join(', ')}`);
