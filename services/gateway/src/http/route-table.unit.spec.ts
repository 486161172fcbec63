import { describe, expect, it } from 'vitest';
import { RouteTable } from './route-table.js';

describe('RouteTable (which methods a path is served with)', () => {
  const table = new RouteTable();
  table.add('GET', '/v1/conversations');
  table.add(['POST'], '/v1/conversations');
  table.add('GET', '/v1/conversations/:id');
  table.add('POST', '/v1/conversations/:id/messages');
  table.add('put', '/v1/agents/:agentId');
  table.add('GET', '/files/*');

  it('names every method of a known path, HEAD with GET, sorted', () => {
    expect(table.methodsOf('/v1/conversations')).toEqual(['GET', 'HEAD', 'POST']);
    expect(table.methodsOf('/v1/conversations/c1/messages')).toEqual(['POST']);
    expect(table.methodsOf('/v1/agents/demo')).toEqual(['PUT']);
    expect(table.methodsOf('/files/a/b/c')).toEqual(['GET', 'HEAD']);
  });

  it('ignores one trailing slash and the query string, as the router does', () => {
    expect(table.methodsOf('/v1/conversations/')).toEqual(['GET', 'HEAD', 'POST']);
    expect(table.methodsOf('/v1/conversations/c1?after=3')).toEqual(['GET', 'HEAD']);
  });

  it('knows nothing of other paths: an empty parameter, an extra or a missing segment', () => {
    expect(table.methodsOf('/v1/nothing')).toEqual([]);
    expect(table.methodsOf('/v1/conversations//messages')).toEqual([]);
    expect(table.methodsOf('/v1/conversations/c1/messages/m1')).toEqual([]);
    expect(table.methodsOf('/v1')).toEqual([]);
  });
});
