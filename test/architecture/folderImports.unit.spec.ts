import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The shape of command-side (issue 34): its feature folders import each other in one direction
 * only, so a change to one never has to follow a loop back into itself. Read from the sources, so
 * a new import that closes a loop fails here, naming the files.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const IMPORT = /(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

const isSpec = (file: string): boolean => file.includes('.spec.') || relative(ROOT, file).startsWith('test/');

const tsFilesUnder = (folder: string): string[] =>
  readdirSync(join(ROOT, folder), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.parentPath.includes('node_modules') && !entry.parentPath.includes('/console/app'))
    .map((entry) => join(entry.parentPath, entry.name));

const sourcesUnder = (folder: string): string[] => tsFilesUnder(folder).filter((file) => !isSpec(file));

/** Each file's relative imports, resolved to repository paths. */
const importsOf = (file: string): string[] => [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) => resolve(dirname(file), (match[1] ?? match[2]) as string));

/** folder -> folders it imports, each with one file that does, for the message. */
const folderEdges = (): Map<string, Map<string, string>> => {
  const edges = new Map<string, Map<string, string>>();
  for (const file of sourcesUnder('command-side')) {
    const from = relative(join(ROOT, 'command-side'), file).split('/')[0] as string;
    for (const imported of importsOf(file)) {
      const target = relative(ROOT, imported).split('/');
      if (target[0] !== 'command-side' || target[1] === from || target[1] === undefined) continue;
      const out = edges.get(from) ?? new Map<string, string>();
      if (!out.has(target[1])) out.set(target[1], relative(ROOT, file));
      edges.set(from, out);
    }
  }
  return edges;
};

/** A loop of folders through imports, or null. */
const findCycle = (edges: Map<string, Map<string, string>>): string[] | null => {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (folder: string): string[] | null => {
    if (state.get(folder) === 'done') return null;
    if (state.get(folder) === 'open') return [...path.slice(path.indexOf(folder)), folder];
    state.set(folder, 'open');
    path.push(folder);
    for (const next of edges.get(folder)?.keys() ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(folder, 'done');
    return null;
  };
  for (const folder of edges.keys()) {
    const cycle = visit(folder);
    if (cycle) return cycle;
  }
  return null;
};

describe('command-side folders: imports go one way', () => {
  it('given every source of command-side, when its imports are followed between folders, then no folder is reached again from itself', () => {
    const edges = folderEdges();
    const cycle = findCycle(edges);
    const through = cycle?.slice(1).map((to, index) => `${cycle[index]} -> ${to} (${edges.get(cycle[index] as string)?.get(to)})`);
    expect(through ?? [], 'an import loop between command-side folders').to.deep.equal([]);
  });

  it('given the catalog and the queue, when their imports are read, then the catalog imports nothing of task or cron, and the queue nothing of task', () => {
    const edges = folderEdges();
    expect([...(edges.get('catalog')?.keys() ?? [])].filter((folder) => folder === 'task' || folder === 'cron')).to.deep.equal([]);
    expect([...(edges.get('queue')?.keys() ?? [])].filter((folder) => folder === 'task')).to.deep.equal([]);
  });

  it('given a made-up loop, when looked for, then it is found (the check can fail)', () => {
    const edges = new Map([
      ['a', new Map([['b', 'a.ts']])],
      ['b', new Map([['c', 'b.ts']])],
      ['c', new Map([['a', 'c.ts']])],
    ]);
    expect(findCycle(edges)).to.deep.equal(['a', 'b', 'c', 'a']);
  });

  it('given the production folders, when every module\'s importers are read, then none is imported by specs alone (contracts and doubles live in test/)', () => {
    const folders = ['shared', 'command-side', 'query-side', 'projections', 'ops', 'bench', 'test'];
    const importers = new Map<string, string[]>();
    for (const file of folders.flatMap(tsFilesUnder)) {
      for (const imported of importsOf(file)) importers.set(imported, [...(importers.get(imported) ?? []), file]);
    }
    // Entry points that npm scripts run (the console build, also run by the specs' hook) count as used.
    const scripts = Object.values((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts).join(' ');
    const specOnly = folders
      .slice(0, 5)
      .flatMap(sourcesUnder)
      .filter((file) => {
        const by = importers.get(file) ?? [];
        return by.length > 0 && by.every(isSpec) && !scripts.includes(relative(ROOT, file));
      })
      .map((file) => relative(ROOT, file));
    expect(specOnly).to.deep.equal([]);
  });
});
