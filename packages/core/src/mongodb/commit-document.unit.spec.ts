import { describe, expect, it } from 'vitest';
import { commitKey, pageKey, parseCommitKey } from './commit-document.js';

describe('commit keys', () => {
  it('parseCommitKey gives back the tenant, stream and first version commitKey was made of', () => {
    expect(parseCommitKey(commitKey('acme', 'conversation-1', 42))).toEqual({
      t: 'acme',
      s: 'conversation-1',
      f: 42,
    });
    // A stream name may hold the separator: the tenant cannot, and the version has a fixed width.
    expect(parseCommitKey(commitKey('acme', 'a|b', 7))).toEqual({ t: 'acme', s: 'a|b', f: 7 });
  });

  it('parseCommitKey refuses what is not a commit key', () => {
    expect(parseCommitKey(pageKey(3))).toBeUndefined();
    expect(parseCommitKey('acme|chat|12')).toBeUndefined();
    expect(parseCommitKey('|chat|0000000000000001')).toBeUndefined();
  });
});
