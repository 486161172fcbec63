import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors/index.js';
import { decodeSubjectToken, encodeSubjectToken, eventSubject, filterSubject } from './subjects.js';

const TOKEN = /^[A-Za-z0-9_-]+$/;

describe('event subjects', () => {
  it('puts tenant, category and stream id in the subject', () => {
    expect(eventSubject('keel.events', { tenantId: 'acme', streamName: 'conversation-01J9ZK' })).toBe(
      'keel.events.acme.conversation.01J9ZK',
    );
  });

  it('encodes any stream id as one valid token that decodes back, without collisions', () => {
    const ids = [
      'a.b',
      'a*b',
      'a>b',
      'a b',
      'tab\there',
      'ünï✓',
      '_x',
      '-x',
      'x_',
      '$sys',
      'a/b',
      'a.b.c',
      '>',
      '*',
      'AAAA',
    ];
    const tokens = ids.map(encodeSubjectToken);
    for (const [i, token] of tokens.entries()) {
      expect(token).toMatch(TOKEN);
      expect(decodeSubjectToken(token)).toBe(ids[i]);
    }
    expect(new Set(tokens).size).toBe(ids.length);
    // An id that looks like an encoded one is itself encoded, so it cannot collide.
    const lookalike = encodeSubjectToken('a.b');
    expect(encodeSubjectToken(lookalike)).not.toBe(lookalike);
    expect(decodeSubjectToken(encodeSubjectToken(lookalike))).toBe(lookalike);
    expect(encodeSubjectToken('plain-Id_09')).toBe('plain-Id_09');
  });

  it('scopes filters to a tenant and/or a category', () => {
    expect(filterSubject('p')).toBe('p.>');
    expect(filterSubject('p', { tenantId: 'acme' })).toBe('p.acme.*.*');
    expect(filterSubject('p', { category: 'turn' })).toBe('p.*.turn.*');
    expect(filterSubject('p', { tenantId: 'acme', category: 'turn' })).toBe('p.acme.turn.*');
  });

  it('rejects tenants and categories that are not subject tokens', () => {
    expect(() => eventSubject('p', { tenantId: 'a.b', streamName: 'order-1' })).toThrow(ValidationError);
    expect(() => eventSubject('p', { tenantId: 'acme', streamName: 'nodash' })).toThrow(ValidationError);
    expect(() => filterSubject('p', { tenantId: '*' })).toThrow(ValidationError);
    expect(() => filterSubject('p', { category: 'a.b' })).toThrow(ValidationError);
  });
});
