// Generated hostile input over every HTTP route, through the gateway, agent, tools and audit
// services as separate processes on real NATS and MongoDB. A seeded generator (the seed is in the
// test name: the same seed sends the same requests) mutates each route's valid request into one
// that must be refused: wrong types, missing and unknown fields, huge strings, deep nesting,
// prototype names, lone surrogates, bytes that are not UTF-8, 0 / -0 / 1e-400 / "NaN" numbers,
// MongoDB operator objects, wildcard and dotted ids, empty bodies, wrong content types. Every
// answer is checked: never a 5xx, every 4xx a problem+json with a code (a 400 names a field), and
// nothing a refused request sent is written (the tenants' listings, conversations and audit trail
// are the same after as before). Then one tenant's largest allowed and oversized requests, in a
// loop, must not slow another tenant's reads.
import { randomUUID } from 'node:crypto';
import { freePort } from '@keel/testkit';
import type { ProcessHandle } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { Answer } from './support/http.js';
import { answerOf } from './support/http.js';
import { startAudit } from './support/platform.js';

/** The generator's seed: a failure names it, and the same seed replays the same requests. */
const SEED = 0x6b6565;

/** mulberry32: a tiny seeded PRNG. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

/** Names Object.prototype answers to in a plain object. */
const PROTOTYPE_IDS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'];
/** Ids that must never reach a NATS subject or a MongoDB filter as written. */
const WILDCARD_IDS = ['a.b', '*', '>', 'a*', 'a.>', '$ne', '%20a%20b', '.', '..%2F..%2Fetc'];
/** Ids that are not ids at all. */
const ODD_IDS = ['%FF', '%ED%A0%80', 'x'.repeat(300), '%F0%9F%98%80', '%00', '%0A'];

/** Operator objects a MongoDB filter would read as a condition. */
const OPERATORS: unknown[] = [{ $ne: null }, { $gt: '' }, { $regex: '.*' }, { $where: '1' }, [{ $ne: 1 }]];

/** A JSON body text nested `depth` deep under `field`. */
const deepText = (field: string, depth: number): string =>
  `{"${field}":${'['.repeat(depth)}${']'.repeat(depth)}}`;

type Role = 'operator' | 'admin' | 'editor' | 'viewer';

/** What a field must be, so the generator can pick a value it is not. */
type FieldKind =
  | { kind: 'text'; max: number; required?: boolean }
  | { kind: 'word'; words: string[]; required?: boolean }
  | { kind: 'int'; min: number; max: number }
  | { kind: 'number'; min: number; max: number; required?: boolean }
  | { kind: 'strings'; maxItems: number; ids?: boolean }
  | { kind: 'object' }
  | { kind: 'bool' };

interface Route {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The path with `{…}` placeholders for ids, filled with valid ids unless a case mutates one. */
  path: string;
  role: Role;
  /** A valid body (POST/PUT): the generator breaks one thing in it. */
  body?: () => Record<string, unknown>;
  fields?: Record<string, FieldKind>;
  /** Query parameters a case may break (each with bad values). */
  query?: Record<string, string[]>;
  /** A valid query that goes with a query mutation. */
  baseQuery?: Record<string, string>;
  /** Whether a valid request writes: then a mutated one must be refused. */
  writes: boolean;
}

/** One generated request. */
interface Case {
  label: string;
  route: Route;
  path: string;
  contentType?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Whether it must be refused (4xx); reads with ignorable mutations may answer 200. */
  mustRefuse: boolean;
  /** A prototype-named id is in it: 404 or 400 only. */
  prototypeId?: boolean;
}

describe(`hostile input over every route (seed ${SEED}, real processes)`, () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  const a = { id: '', admin: '', editor: '', viewer: '', keyId: '' };
  const b = { id: '', admin: '', editor: '', viewer: '' };
  let conversationId = '';
  const sent: Array<{ c: Case; answer: Answer }> = [];

  const keyOf = (role: Role): string => (role === 'operator' ? platform.operatorKey : a[role]);

  const raw = async (
    method: string,
    path: string,
    key: string,
    body?: string | Buffer,
    contentType?: string,
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const response = await fetch(`${platform.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(contentType ? { 'content-type': contentType } : {}),
        ...headers,
      },
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(15_000),
    });
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      // A feed that opened: its status and headers are the answer; it would stream on.
      await response.body?.cancel();
      return {
        status: response.status,
        headers: response.headers,
        contentType: 'text/event-stream',
        text: '',
        body: undefined,
      };
    }
    return answerOf(response);
  };

  const json = async (method: string, path: string, key: string, body?: unknown): Promise<Answer> =>
    body === undefined
      ? raw(method, path, key)
      : raw(method, path, key, JSON.stringify(body), 'application/json');

  /** Everything a refused request could have changed, as the tenants' own reads show it. */
  const snapshot = async () => {
    const read = async (path: string, key: string) => {
      const answer = await json('GET', path, key);
      expect(answer.status, `${path}: ${answer.text}`).toBe(200);
      return answer.body;
    };
    const withoutLastUse = (body: unknown) =>
      (body as { data: Array<Record<string, unknown>> }).data.map(({ lastUsedAt: _, ...key }) => key);
    return {
      tenants: await read('/v1/tenants', platform.operatorKey),
      aAgents: await read('/v1/agents', a.admin),
      aTools: await read('/v1/tools', a.admin),
      aKeys: withoutLastUse(await read('/v1/keys', a.admin)),
      aConversations: await read('/v1/conversations', a.viewer),
      aConversation: await read(`/v1/conversations/${conversationId}`, a.viewer),
      aAudit: await read('/v1/audit?limit=200', a.admin),
      bAgents: await read('/v1/agents', b.admin),
      bAudit: await read('/v1/audit?limit=200', b.admin),
    };
  };

  /** Waits until the audit trail stops changing (the projection is asynchronous). */
  const settledSnapshot = async () => {
    let previous = JSON.stringify(await snapshot());
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const next = JSON.stringify(await snapshot());
      if (next === previous) return JSON.parse(next) as unknown;
      previous = next;
    }
    throw new Error('the tenants kept changing');
  };

  beforeAll(async () => {
    const auditPort = await freePort();
    platform = await startGatewayPlatform('hostile', {
      gatewayEnv: {
        AUDIT_GRPC_URL: `127.0.0.1:${auditPort}`,
        KEEL_RATE_LIMIT_RPM: '0',
        KEEL_TENANT_RATE_LIMIT_RPM: '0',
      },
    });
    audit = await startAudit(platform.env, auditPort);
    const aTenant = await platform.tenantWithKeys('Hostile A', ['admin', 'editor', 'viewer'] as const);
    Object.assign(a, { id: aTenant.id, ...aTenant.keys });
    const bTenant = await platform.tenantWithKeys('Hostile B', ['admin', 'editor', 'viewer'] as const);
    Object.assign(b, { id: bTenant.id, ...bTenant.keys });
    a.keyId = ((await json('GET', '/v1/keys', a.admin)).body as { data: Array<{ id: string }> }).data[0]!.id;
    const tool = await json('PUT', '/v1/tools/lookup', a.admin, {
      description: 'Look up an order',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
      url: 'https://tools.example.com/lookup',
    });
    expect(tool.status, tool.text).toBe(200);
    const agent = await json('PUT', '/v1/agents/a', a.admin, { model: 'demo:keel-demo', tools: ['lookup'] });
    expect(agent.status, agent.text).toBe(200);
    expect((await json('PUT', '/v1/agents/b', b.admin, { model: 'demo:keel-demo' })).status).toBe(200);
    const created = await json('POST', '/v1/conversations', a.editor, {
      agentId: 'a',
      title: 'Hostile',
      metadata: { k: 'v', constructor: 'c', toString: 't' },
    });
    expect(created.status, created.text).toBe(201);
    conversationId = (created.body as { id: string }).id;
  });

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  /** The routes of API.md the gateway serves, each with a valid request the generator breaks. */
  const routes = (): Route[] => {
    const LIMITS = [
      '0',
      '-0',
      '1e-400',
      'NaN',
      '-1',
      '1000000',
      'abc',
      '1.5',
      ' 1',
      '0x10',
      '[object Object]',
    ];
    const CURSORS = ['$ne', '{"$ne":null}', 'a.b*', '>', 'x'.repeat(300), '%FF'];
    return [
      {
        name: 'create tenant',
        method: 'POST',
        path: '/v1/tenants',
        role: 'operator',
        writes: true,
        body: () => ({ name: 'T' }),
        fields: { name: { kind: 'text', max: 100, required: true } },
      },
      { name: 'list tenants', method: 'GET', path: '/v1/tenants', role: 'operator', writes: false },
      {
        name: 'issue tenant key',
        method: 'POST',
        path: '/v1/tenants/{tenant}/keys',
        role: 'operator',
        writes: true,
        body: () => ({ role: 'viewer' }),
        fields: {
          role: { kind: 'word', words: ['admin', 'editor', 'viewer'], required: true },
          name: { kind: 'text', max: 100 },
        },
      },
      {
        name: 'list tenant keys',
        method: 'GET',
        path: '/v1/tenants/{tenant}/keys',
        role: 'operator',
        writes: false,
      },
      {
        name: 'revoke tenant key',
        method: 'DELETE',
        path: '/v1/tenants/{tenant}/keys/{key}',
        role: 'operator',
        writes: true,
      },
      {
        name: 'set budget',
        method: 'PUT',
        path: '/v1/tenants/{tenant}/budget',
        role: 'operator',
        writes: true,
        body: () => ({ monthlyUsd: 10 }),
        fields: { monthlyUsd: { kind: 'number', min: 0, max: 1e9, required: true } },
      },
      {
        name: 'issue key',
        method: 'POST',
        path: '/v1/keys',
        role: 'admin',
        writes: true,
        body: () => ({ role: 'viewer' }),
        fields: {
          role: { kind: 'word', words: ['admin', 'editor', 'viewer'], required: true },
          name: { kind: 'text', max: 100 },
        },
      },
      { name: 'list keys', method: 'GET', path: '/v1/keys', role: 'admin', writes: false },
      { name: 'revoke key', method: 'DELETE', path: '/v1/keys/{key}', role: 'admin', writes: true },
      {
        name: 'put provider',
        method: 'PUT',
        path: '/v1/providers/{provider}',
        role: 'admin',
        writes: true,
        body: () => ({ apiKey: 'sk-tenant', baseUrl: 'https://llm.example.com/v1' }),
        fields: { apiKey: { kind: 'text', max: 4096 }, baseUrl: { kind: 'text', max: 2048 } },
      },
      {
        name: 'put tool',
        method: 'PUT',
        path: '/v1/tools/{tool}',
        role: 'admin',
        writes: true,
        body: () => ({
          description: 'Look up an order',
          inputSchema: { type: 'object' },
          url: 'https://tools.example.com/x',
        }),
        fields: {
          description: { kind: 'text', max: 2000 },
          inputSchema: { kind: 'object' },
          url: { kind: 'text', max: 2048 },
          kind: { kind: 'word', words: ['webhook'] },
          approval: { kind: 'word', words: ['never', 'always'] },
          roles: { kind: 'strings', maxItems: 3 },
          phases: { kind: 'strings', maxItems: 50 },
          timeoutMs: { kind: 'int', min: 100, max: 120_000 },
        },
      },
      { name: 'list tools', method: 'GET', path: '/v1/tools', role: 'admin', writes: false },
      {
        name: 'put agent',
        method: 'PUT',
        path: '/v1/agents/{agent}',
        role: 'admin',
        writes: true,
        body: () => ({ model: 'demo:keel-demo', tools: ['lookup'] }),
        fields: {
          model: { kind: 'text', max: 200, required: true },
          instructions: { kind: 'text', max: 100_000 },
          tools: { kind: 'strings', maxItems: 128, ids: true },
          maxSteps: { kind: 'int', min: 1, max: 100 },
          temperature: { kind: 'number', min: 0, max: 2 },
          toolResultMaxChars: { kind: 'int', min: 100, max: 1_000_000 },
          phases: { kind: 'object' },
        },
      },
      { name: 'list agents', method: 'GET', path: '/v1/agents', role: 'admin', writes: false },
      { name: 'get agent', method: 'GET', path: '/v1/agents/{agent}', role: 'admin', writes: false },
      {
        name: 'rotate webhook secret',
        method: 'POST',
        path: '/v1/webhook-secret',
        role: 'admin',
        writes: true,
        body: () => ({}),
        fields: {},
      },
      {
        name: 'create conversation',
        method: 'POST',
        path: '/v1/conversations',
        role: 'editor',
        writes: true,
        body: () => ({ agentId: 'a', title: 'T', metadata: { k: 'v' } }),
        fields: {
          agentId: { kind: 'text', max: 64, required: true },
          title: { kind: 'text', max: 200 },
          metadata: { kind: 'object' },
        },
      },
      {
        name: 'list conversations',
        method: 'GET',
        path: '/v1/conversations',
        role: 'viewer',
        writes: false,
        query: { limit: LIMITS, cursor: CURSORS },
      },
      {
        name: 'get conversation',
        method: 'GET',
        path: '/v1/conversations/{conversation}',
        role: 'viewer',
        writes: false,
      },
      {
        name: 'send message',
        method: 'POST',
        path: '/v1/conversations/{conversation}/messages',
        role: 'editor',
        writes: true,
        body: () => ({ content: 'hello' }),
        fields: {
          content: { kind: 'text', max: 100_000, required: true },
          ifBusy: { kind: 'word', words: ['reject', 'enqueue', 'interrupt'] },
        },
      },
      {
        name: 'decide approval',
        method: 'POST',
        path: '/v1/conversations/{conversation}/approvals/{approval}',
        role: 'editor',
        writes: true,
        body: () => ({ decision: 'approve' }),
        fields: {
          decision: { kind: 'word', words: ['approve', 'deny'], required: true },
          reason: { kind: 'text', max: 2000 },
        },
      },
      {
        name: 'cancel',
        method: 'POST',
        path: '/v1/conversations/{conversation}/cancel',
        role: 'editor',
        writes: true,
      },
      {
        name: 'events feed',
        method: 'GET',
        path: '/v1/conversations/{conversation}/events',
        role: 'viewer',
        writes: false,
        query: { after: ['-1', 'NaN', '1e-400', '$ne', 'x'.repeat(300), '1.2.3.4', '0x1'] },
      },
      {
        name: 'usage',
        method: 'GET',
        path: '/v1/usage',
        role: 'viewer',
        writes: false,
        baseQuery: { from: '2026-01-01', to: '2026-01-31' },
        query: {
          from: ['2026-13-01', '0', '$ne', 'NaN', '2026-02-30', '99999-01-01'],
          to: ['2025-01-01', '', 'x'.repeat(300)],
          tz: ['Mars/Olympus', '../../etc/passwd', '$ne', 'x'.repeat(300)],
          groupBy: [...PROTOTYPE_IDS, '$ne', 'tenant', 'DAY'],
          tenantId: ['$ne', a.id],
        },
      },
      {
        name: 'audit',
        method: 'GET',
        path: '/v1/audit',
        role: 'admin',
        writes: false,
        query: {
          limit: LIMITS,
          cursor: CURSORS,
          type: ['$ne', 'a.b', '*', 'x'.repeat(65), ...PROTOTYPE_IDS.slice(0, 1)],
          tenantId: ['$ne', a.id],
        },
      },
      {
        name: 'pending approvals',
        method: 'GET',
        path: '/v1/approvals',
        role: 'admin',
        writes: false,
        query: {
          status: ['done', 'PENDING', '$ne', '', ...PROTOTYPE_IDS.slice(0, 2)],
          tenantId: ['$ne', b.id, ...PROTOTYPE_IDS.slice(0, 1)],
        },
      },
      {
        name: 'operator overview',
        method: 'GET',
        path: '/v1/operator/overview',
        role: 'operator',
        writes: false,
        query: { tz: ['Mars/Olympus', '../../etc/passwd', '$ne', 'x'.repeat(300), 'Europe/Nowhere'] },
      },
      {
        name: 'dead letters',
        method: 'GET',
        path: '/v1/dead-letters',
        role: 'admin',
        writes: false,
        query: { limit: LIMITS, tenantId: ['$ne', b.id], consumer: [''] },
      },
      {
        name: 'replay dead letter',
        method: 'POST',
        path: '/v1/dead-letters/{letter}/replay',
        role: 'operator',
        writes: true,
      },
    ];
  };

  /** Valid ids for a route's placeholders. */
  const validIds = (): Record<string, string> => ({
    tenant: a.id,
    key: randomUUID(),
    provider: 'openai',
    tool: 'lookup',
    agent: 'a',
    conversation: conversationId,
    approval: randomUUID(),
    letter: randomUUID(),
  });

  const fill = (path: string, ids: Record<string, string>): string =>
    path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? name);

  /** A value that `kind` is not. */
  const badValue = (kind: FieldKind, pick: <T>(list: readonly T[]) => T): { text: string } => {
    const common = [
      'null',
      'true',
      '[]',
      '{}',
      '[1,2]',
      ...OPERATORS.map((o) => JSON.stringify(o)),
      `${'['.repeat(40)}${']'.repeat(40)}`,
    ];
    switch (kind.kind) {
      case 'text':
        return {
          text: pick([
            ...common,
            '0',
            '-0',
            '1e-400',
            '"\\ud800"',
            '"a\\udfffb"',
            JSON.stringify('x'.repeat(kind.max + 1)),
            '12',
          ]),
        };
      case 'word':
        return {
          text: pick([
            ...common,
            '""',
            '"APPROVE"',
            '"\\ud800"',
            ...PROTOTYPE_IDS.map((p) => JSON.stringify(p)),
            '"x"',
            '0',
          ]),
        };
      case 'int':
        return {
          text: pick([
            ...common,
            '0',
            '-0',
            '1e-400',
            '-1',
            '1.5',
            '"NaN"',
            '"10"',
            `${kind.max + 1}`,
            `${kind.min - 1}`,
            '1e400',
            '-1e400',
          ]),
        };
      case 'number':
        return {
          text: pick([
            ...common,
            '-1',
            '-0.000001',
            '"NaN"',
            '"Infinity"',
            '"10"',
            '1e400',
            '-1e400',
            `${kind.max * 10}`,
          ]),
        };
      case 'strings':
        return {
          text: pick([
            ...common.filter((t) => t !== '[]'),
            '"a"',
            '[null]',
            '[1]',
            '["\\ud800"]',
            '[["x"]]',
            JSON.stringify(Array.from({ length: kind.maxItems + 1 }, (_, i) => `t${i}`)),
            ...(kind.ids ? [JSON.stringify(PROTOTYPE_IDS), JSON.stringify(['a.b', '*', '>'])] : []),
            JSON.stringify(['x'.repeat(300)]),
          ]),
        };
      case 'object':
        return {
          text: pick([
            'null',
            'true',
            '[]',
            '"x"',
            '0',
            deepText('a', 60).slice(5, -1),
            JSON.stringify({ k: { $ne: null } }),
            '{"k":"\\ud800"}',
          ]),
        };
      case 'bool':
        return { text: pick(['"true"', '0', 'null', '{}']) };
    }
  };

  /** Builds the generated cases: one mutation of one route each, drawn with the seeded PRNG. */
  const generate = (count: number): Case[] => {
    const random = prng(SEED);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const all = routes();
    const cases: Case[] = [];
    const validBody = (route: Route) => JSON.stringify(route.body?.() ?? {});
    for (let i = 0; i < count; i++) {
      const route = all[i % all.length]!;
      const ids = validIds();
      const placeholders = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const mutations: Array<() => Case> = [];
      const base = { route, mustRefuse: route.writes };
      // Path ids: prototype names, wildcards, odd bytes.
      for (const placeholder of placeholders) {
        mutations.push(() => {
          const id = pick([...PROTOTYPE_IDS, ...WILDCARD_IDS, ...ODD_IDS]);
          const body = route.body ? validBody(route) : undefined;
          return {
            ...base,
            // A URL resolves a `.` segment away: `/v1/agents/.` is sent as `/v1/agents/`, which is
            // `/v1/agents` (a trailing slash is the same route), so a read may answer 200.
            mustRefuse: id !== '.' || route.writes,
            prototypeId: PROTOTYPE_IDS.includes(id),
            label: `${placeholder}=${id.slice(0, 40)}`,
            path: fill(route.path, { ...ids, [placeholder]: id }),
            ...(body === undefined ? {} : { body, contentType: 'application/json' }),
          };
        });
      }
      // Query parameters.
      for (const [param, values] of Object.entries(route.query ?? {})) {
        mutations.push(() => {
          const value = pick(values);
          const repeated = random() < 0.15;
          const query = new URLSearchParams(route.baseQuery);
          query.set(param, value);
          if (repeated) query.append(param, value);
          return {
            ...base,
            mustRefuse: true,
            label: `?${param}=${value.slice(0, 40)}${repeated ? ' (twice)' : ''}`,
            path: `${fill(route.path, ids)}?${query.toString().replaceAll('%25FF', '%FF')}`,
          };
        });
      }
      if (route.body) {
        const path = fill(route.path, ids);
        const body = route.body();
        const withField = (field: string, valueText: string) => {
          const others = Object.entries(body)
            .filter(([k]) => k !== field)
            .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
          return `{${[...others, `${JSON.stringify(field)}:${valueText}`].join(',')}}`;
        };
        for (const [field, kind] of Object.entries(route.fields ?? {})) {
          mutations.push(() => {
            const { text } = badValue(kind, pick);
            return {
              ...base,
              mustRefuse: true,
              label: `${field}: ${text.slice(0, 40)}`,
              path,
              body: withField(field, text),
              contentType: 'application/json',
            };
          });
          if ('required' in kind && kind.required) {
            mutations.push(() => {
              const { [field]: _, ...rest } = body;
              return {
                ...base,
                mustRefuse: true,
                label: `${field} missing`,
                path,
                body: JSON.stringify(rest),
                contentType: 'application/json',
              };
            });
          }
        }
        const structural: Array<[string, () => Partial<Case>]> = [
          [
            'unknown field',
            () => ({ body: withField(pick(['extra', '$where', 'constructor', 'toString']), '1') }),
          ],
          ['__proto__ key', () => ({ body: withField('__proto__', '{"polluted":true}') })],
          [
            'constructor.prototype',
            () => ({ body: withField('constructor', '{"prototype":{"polluted":true}}') }),
          ],
          ['not an object', () => ({ body: pick(['[]', '"x"', '0', 'null', 'true', '[{}]']) })],
          ['empty body', () => ({ body: '' })],
          ['not JSON', () => ({ body: pick(['{', '{"a":}', "{'a':1}", '{"a":1}}', 'NaN', '\u0000']) })],
          ['deep nesting', () => ({ body: deepText('x', pick([33, 100, 10_000, 100_000])) })],
          ['lone surrogate', () => ({ body: withField(pick(['zz', 'extra']), '"\\ud800"') })],
          ['lone surrogate key', () => ({ body: `{"\\udc00":1,${validBody(route).slice(1)}` })],
          [
            'invalid UTF-8',
            () => ({
              body: Buffer.concat([
                Buffer.from(validBody(route).slice(0, -1)),
                Buffer.from(',"x":"'),
                Buffer.from(pick([[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]])),
                Buffer.from('"}'),
              ]),
            }),
          ],
          [
            'huge string',
            () => ({ body: withField('x', JSON.stringify('y'.repeat(pick([200_000, 900_000])))) }),
          ],
          ['over the size limit', () => ({ body: withField('x', JSON.stringify('y'.repeat(1_100_000))) })],
          ['text/plain', () => ({ contentType: 'text/plain', body: validBody(route) })],
          [
            'form',
            () => ({
              contentType: 'application/x-www-form-urlencoded',
              body: new URLSearchParams(
                Object.entries(body).map(([k, v]): [string, string] => [k, String(v)]),
              ).toString(),
            }),
          ],
          ['no content type', () => ({ contentType: '', body: validBody(route) })],
          [
            'multipart',
            () => ({
              contentType: 'multipart/form-data; boundary=x',
              body: `--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--`,
            }),
          ],
          [
            'json with charset latin1',
            () => ({
              contentType: 'application/json; charset=latin1',
              body: Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x3a, 0x31, 0x7d]),
            }),
          ],
        ];
        for (const [label, make] of structural) {
          mutations.push(() => ({
            ...base,
            mustRefuse: true,
            label,
            path,
            contentType: 'application/json',
            ...make(),
          }));
        }
      }
      // Hostile headers on reads: an acting user or request id named like a prototype member,
      // an operator, a wildcard, or too long (kept, replaced or refused, never a 5xx).
      if (!route.writes) {
        mutations.push(() => {
          const header = pick(['x-keel-user', 'x-request-id', 'idempotency-key', 'last-event-id']);
          const value = pick([
            ...PROTOTYPE_IDS,
            '$ne',
            '{"$ne":null}',
            'a.b',
            '*',
            '>',
            'x'.repeat(300),
            ' ',
          ]);
          return {
            ...base,
            label: `${header}: ${value.slice(0, 40)}`,
            path: fill(route.path, ids),
            headers: { [header]: value },
          };
        });
      }
      // Any route: parameters nobody asked for are ignored by reads (they may answer 200) and
      // never make a write happen.
      if (!route.writes)
        mutations.push(() => ({
          ...base,
          label: 'unasked parameters',
          path: `${fill(route.path, ids)}?${pick(['x[$ne]=1', 'limit[$gt]=', '__proto__[x]=1', 'constructor=1', 'a=%FF'])}`,
        }));
      cases.push(pick(mutations)());
    }
    return cases;
  };

  const CASES = 1_200;

  it(`answers ${CASES} generated bad requests with 4xx problems, never a 5xx, and writes nothing`, async () => {
    const before = await settledSnapshot();
    const cases = generate(CASES);
    // Four at a time: quick, and the order within a batch cannot change an outcome (nothing is written).
    for (let i = 0; i < cases.length; i += 4) {
      await Promise.all(
        cases.slice(i, i + 4).map(async (c) => {
          const answer = await raw(
            c.route.method,
            c.path,
            keyOf(c.route.role),
            c.body,
            c.contentType,
            c.headers,
          ).catch((error: unknown): Answer => ({
            status: 599,
            headers: new Headers(),
            contentType: '',
            text: String(error),
            body: undefined,
          }));
          sent.push({ c, answer });
        }),
      );
    }
    const problems: string[] = [];
    for (const { c, answer } of sent) {
      const what = `${c.route.method} ${c.path.slice(0, 120)} [${c.route.name}: ${c.label}] → ${answer.status} ${answer.text.slice(0, 200)}`;
      if (answer.status === 599) problems.push(`no answer: ${what}`);
      else if (answer.status >= 500) problems.push(`5xx: ${what}`);
      if (c.mustRefuse && answer.status < 400) problems.push(`accepted: ${what}`);
      if (c.prototypeId && ![400, 404].includes(answer.status)) problems.push(`prototype id: ${what}`);
      if (answer.status >= 400) {
        const body = answer.body as { code?: unknown; status?: unknown; detail?: unknown } | undefined;
        if (!answer.contentType.startsWith('application/problem+json'))
          problems.push(`not a problem: ${what}`);
        else if (typeof body?.code !== 'string' || body.status !== answer.status)
          problems.push(`no code: ${what}`);
        else if (answer.status === 400 && !/^[A-Za-z_$][\w$.[\]-]*(:| )/.test(String(body.detail ?? ''))) {
          problems.push(`400 naming no field: ${what}`);
        }
      }
    }
    const tally = new Map<string, number>();
    for (const { c, answer } of sent) {
      const k = `${answer.status} ${c.label.replace(/[:=?].*/, '')}`;
      tally.set(k, (tally.get(k) ?? 0) + 1);
    }
    const outcomes = [...tally]
      .sort()
      .map(([k, n]) => `${n}\t${k}`)
      .join('\n');
    expect(problems, `${problems.slice(0, 30).join('\n')}\n\noutcomes:\n${outcomes}`).toEqual([]);
    // The refusals are of every kind: not found, invalid, too large, unsupported type.
    expect([...new Set(sent.map((x) => x.answer.status))].sort()).toEqual(
      expect.arrayContaining([400, 404, 413, 415]),
    );
    // Every route was exercised, with refusals of each kind.
    expect(new Set(sent.map((s) => s.c.route.name)).size).toBe(routes().length);
    expect(await settledSnapshot()).toEqual(before);
  });

  it('prototype names are unknown on every route that takes an id, and in bodies', async () => {
    const ids = validIds();
    for (const route of routes()) {
      for (const placeholder of [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)) {
        for (const id of PROTOTYPE_IDS) {
          const body = route.body ? JSON.stringify(route.body()) : undefined;
          const path = fill(route.path, { ...ids, [placeholder]: id });
          const answer = await raw(route.method, path, keyOf(route.role), body, body && 'application/json');
          expect([400, 404], `${route.method} ${path}: ${answer.status} ${answer.text}`).toContain(
            answer.status,
          );
        }
      }
    }
    for (const id of PROTOTYPE_IDS) {
      expect((await json('POST', '/v1/conversations', a.editor, { agentId: id })).status).toBe(404);
      const agent = await json('PUT', '/v1/agents/x', a.admin, { model: 'demo:keel-demo', tools: [id] });
      expect(agent.status, agent.text).toBe(400);
      expect((agent.body as { detail: string }).detail).toMatch(/^tools/);
      const usage = await json('GET', `/v1/usage?from=2026-01-01&to=2026-01-02&groupBy=${id}`, a.viewer);
      expect(usage.status, usage.text).toBe(400);
    }
  });

  it('a JSON null, array or string body is refused on every route that takes a body', async () => {
    const ids = validIds();
    for (const route of [
      ...routes().filter((r) => r.body),
      { ...routes()[0]!, method: 'POST' as const, path: '/v1/webhook-secret', role: 'admin' as const },
    ]) {
      for (const body of ['null', '[]', '"x"', '0']) {
        const answer = await raw(
          route.method,
          fill(route.path, ids),
          keyOf(route.role),
          body,
          'application/json',
        );
        expect(answer.status, `${route.method} ${route.path} ${body}: ${answer.text}`).toBe(400);
        expect((answer.body as { detail: string }).detail).toMatch(/^body/);
      }
    }
  });

  it('zero means zero: a given 0, -0 or 1e-400 is a 400 naming the field, an absent one the default', async () => {
    for (const zero of ['0', '-0', '1e-400']) {
      for (const field of ['maxSteps', 'toolResultMaxChars']) {
        const answer = await raw(
          'PUT',
          '/v1/agents/z',
          a.admin,
          `{"model":"demo:keel-demo","${field}":${zero}}`,
          'application/json',
        );
        expect(answer.status, answer.text).toBe(400);
        expect((answer.body as { detail: string }).detail).toMatch(new RegExp(`^${field}`));
      }
      const tool = await raw(
        'PUT',
        '/v1/tools/z',
        a.admin,
        `{"description":"d","inputSchema":{"type":"object"},"url":"https://x.example.com","timeoutMs":${zero}}`,
        'application/json',
      );
      expect(tool.status, tool.text).toBe(400);
    }
    expect((await json('GET', '/v1/agents/z', a.admin)).status).toBe(404);
  });

  it('stores text only as it can return it: a lone surrogate or a non-UTF-8 byte is refused, emoji come back unchanged', async () => {
    const surrogate = await raw(
      'POST',
      '/v1/conversations',
      a.editor,
      '{"agentId":"a","title":"fuzz \\ud800"}',
      'application/json',
    );
    expect(surrogate.status).toBe(400);
    expect((surrogate.body as { detail: string }).detail).toMatch(/^title/);
    const bytes = await raw(
      'POST',
      '/v1/conversations',
      a.editor,
      Buffer.from([...Buffer.from('{"agentId":"a","title":"fuzz '), 0xff, ...Buffer.from('"}')]),
      'application/json',
    );
    expect(bytes.status).toBe(400);
    expect((bytes.body as { detail: string }).detail).toMatch(/^body/);
    const agent = await json('PUT', '/v1/agents/emoji', a.admin, {
      model: 'demo:keel-demo',
      instructions: 'fuzz 😀 é 中',
    });
    expect(agent.status).toBe(200);
    expect(
      ((await json('GET', '/v1/agents/emoji', a.admin)).body as { instructions: string }).instructions,
    ).toBe('fuzz 😀 é 中');
  });

  it('a tool schema whose pattern could backtrack exponentially is refused naming inputSchema', async () => {
    for (const pattern of ['^(a+)+$', '(x|xx)*y', '(.)\\1']) {
      const answer = await json('PUT', '/v1/tools/redos', a.admin, {
        description: 'd',
        inputSchema: { type: 'object', properties: { q: { type: 'string', pattern } } },
        url: 'https://tools.example.com/x',
      });
      expect(answer.status, answer.text).toBe(400);
      expect((answer.body as { detail: string }).detail).toMatch(/^inputSchema/);
    }
    expect((await json('GET', '/v1/tools', a.admin)).text).not.toContain('redos');
  });

  it("one tenant's largest and oversized requests in a loop do not slow another tenant's reads", async () => {
    const big = {
      agent: JSON.stringify({
        model: 'demo:keel-demo',
        instructions: 'i'.repeat(100_000),
        tools: ['lookup'],
      }),
      tool: JSON.stringify({
        description: 'd'.repeat(2000),
        inputSchema: { type: 'object', description: 's'.repeat(60_000) },
        url: 'https://tools.example.com/x',
      }),
      tools: JSON.stringify({
        model: 'demo:keel-demo',
        tools: Array.from({ length: 100_000 }, (_, i) => `t${i}`),
      }),
      deep: deepText('inputSchema', 10_000),
      oversized: JSON.stringify({ model: 'demo:keel-demo', instructions: 'i'.repeat(1_200_000) }),
      metadata: JSON.stringify({
        agentId: 'a',
        metadata: Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`k${i}`, 'v'])),
      }),
    };
    let running = true;
    const load = async () => {
      const outcomes: number[] = [];
      while (running) {
        const answers = await Promise.all([
          raw('PUT', '/v1/agents/big', a.admin, big.agent, 'application/json'),
          raw('PUT', '/v1/tools/big', a.admin, big.tool, 'application/json'),
          raw('PUT', '/v1/agents/many', a.admin, big.tools, 'application/json'),
          raw('PUT', '/v1/tools/deep', a.admin, big.deep, 'application/json'),
          raw('PUT', '/v1/agents/huge', a.admin, big.oversized, 'application/json'),
          raw('POST', '/v1/conversations', a.editor, big.metadata, 'application/json'),
        ]);
        outcomes.push(...answers.map((x) => x.status));
      }
      return outcomes;
    };
    const loads = [load(), load()];
    await new Promise((r) => setTimeout(r, 300));
    const latencies: number[] = [];
    for (let i = 0; i < 40; i++) {
      const started = performance.now();
      const answer = await json('GET', '/v1/agents/b', b.admin);
      latencies.push(performance.now() - started);
      expect(answer.status).toBe(200);
    }
    running = false;
    const outcomes = (await Promise.all(loads)).flat();
    latencies.sort((x, y) => x - y);
    const p50 = latencies[Math.floor(latencies.length / 2)]!;
    const max = latencies.at(-1)!;
    expect(new Set(outcomes)).toEqual(new Set([200, 400, 413]));
    expect(max, `p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms`).toBeLessThan(1_000);
    expect(p50).toBeLessThan(250);
  });
});
