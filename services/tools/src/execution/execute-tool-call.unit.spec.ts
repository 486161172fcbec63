import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '@keel/runtime';
import type { BuiltinTool } from '@keel/tooling';
import { executeToolCall } from './execute-tool-call.js';
import type { ToolCallDependencies, ToolCallRequest } from './execute-tool-call.js';
import { InMemoryToolCallLedger } from './ledger.js';
import { startTestWebhook } from './testing/webhook-server.js';
import type { TestWebhook } from './testing/webhook-server.js';
import type { ToolDefinition } from './types.js';
import { ToolCallCancelledError, WebhookExecutor } from './webhook-executor.js';

const SECRET = 'whsec_exec_test';
let hook: TestWebhook;
let ledger: InMemoryToolCallLedger;
let deps: ToolCallDependencies;
let counter = 0;

beforeEach(async () => {
  hook = await startTestWebhook(SECRET);
  hook.reply((r) => ({ status: 200, body: JSON.stringify({ forecast: 'sunny', call: r.nthForKey }) }));
  ledger = new InMemoryToolCallLedger();
  deps = {
    ledger,
    // The test webhooks listen on loopback: opened on purpose, as KEEL_EGRESS_ALLOW would.
    webhooks: new WebhookExecutor({
      baseDelayMs: 10,
      maxDelayMs: 50,
      egress: EgressPolicy.fromAllowList('127.0.0.0/8'),
    }),
    now: () => new Date('2025-03-10T12:00:00Z'),
  };
});
afterEach(async () => {
  await hook.close();
});

const weatherTool = (overrides: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name: 'get_weather',
  kind: 'webhook',
  url: hook.url,
  timeoutMs: 2000,
  approval: 'never',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer', maximum: 14 } },
    required: ['city'],
    additionalProperties: false,
  },
  ...overrides,
});

const builtin = (name: string): ToolDefinition => ({
  name,
  kind: 'builtin',
  timeoutMs: 1000,
  approval: 'never',
  inputSchema: { type: 'object' },
});

const call = (overrides: Partial<ToolCallRequest> = {}): ToolCallRequest => ({
  tenantId: 'acme',
  conversationId: 'conv-1',
  toolCallId: `call_${++counter}`,
  name: overrides.tool?.name ?? 'get_weather',
  args: { city: 'Lyon' },
  tool: weatherTool(),
  approvalGranted: false,
  webhookSecret: SECRET,
  ...overrides,
});

describe('executeToolCall: webhooks, exactly once', () => {
  it('executes a webhook call and records the outcome in the ledger', async () => {
    const request = call();
    const result = await executeToolCall(request, deps);
    expect(result).toMatchObject({
      ok: true,
      result: { forecast: 'sunny', call: 1 },
      attempts: 1,
      execution: 'executed',
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0]).toMatchObject({ idempotencyKey: request.toolCallId, signatureValid: true });
    const record = await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId });
    expect(record).toMatchObject({ state: 'completed', conversationId: 'conv-1', name: 'get_weather' });
    const { execution: _execution, ...outcome } = result;
    expect(record?.outcome).toEqual(outcome);
  });

  it('claims the call while the caller checks it is still wanted; a no stops it before the webhook, resumable', async () => {
    const request = call();
    const notWanted = new Error('turn cancelled');
    let claimedBeforeAnswer = false;
    const wanted = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      claimedBeforeAnswer =
        (await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId })) !== undefined;
      throw notWanted;
    })();
    await expect(executeToolCall(request, deps, { wanted })).rejects.toBe(notWanted);
    expect(claimedBeforeAnswer).toBe(true);
    expect(hook.countFor(request.toolCallId)).toBe(0);
    // Left in flight, as after a crash: a later trigger runs it under the same key.
    expect(await executeToolCall(request, deps)).toMatchObject({ ok: true, execution: 'resumed' });
    expect(hook.countFor(request.toolCallId)).toBe(1);
  });

  it('records a fresh outcome alongside the ledger (both under way at once); a replay is not handed over', async () => {
    const request = call();
    const complete = ledger.complete.bind(ledger);
    const order: string[] = [];
    ledger.complete = async (key, outcome) => {
      order.push('ledger starts');
      await new Promise((resolve) => setTimeout(resolve, 20));
      order.push('ledger done');
      return complete(key, outcome);
    };
    const alongside: unknown[] = [];
    const recordAlongside = async (outcome: unknown) => {
      order.push('log starts');
      alongside.push(outcome);
    };
    const result = await executeToolCall(request, deps, { recordAlongside });
    expect(order).toEqual(['ledger starts', 'log starts', 'ledger done']);
    expect(alongside).toEqual([result]);
    expect(result).toMatchObject({ ok: true, execution: 'executed' });
    expect((await executeToolCall(request, deps, { recordAlongside })).execution).toBe('replayed');
    expect(alongside).toHaveLength(1);
  });

  it('a redelivery after completion answers from the ledger and does not call the webhook again', async () => {
    const request = call();
    const first = await executeToolCall(request, deps);
    const again = await executeToolCall(request, deps);
    const third = await executeToolCall({ ...request, args: { city: 'Paris' } }, deps);
    expect(hook.countFor(request.toolCallId)).toBe(1);
    const { execution: _e, ...firstOutcome } = first;
    expect(again).toEqual({ ...firstOutcome, execution: 'replayed' });
    expect(third).toEqual({ ...firstOutcome, execution: 'replayed' });
  });

  it('an interrupted call is executed again with the same Idempotency-Key, then answered from the ledger', async () => {
    hook.reply((r) =>
      r.nthForKey === 1
        ? { hang: 'before-headers' }
        : { status: 200, body: JSON.stringify({ booked: 'seat 12A' }) },
    );
    const request = call();
    // The first executor is interrupted mid-call (a shutdown, a crash): no outcome is recorded.
    const controller = new AbortController();
    const interrupted = executeToolCall(request, deps, { signal: controller.signal });
    await waitFor(() => hook.requests.length === 1);
    controller.abort();
    await expect(interrupted).rejects.toBeInstanceOf(ToolCallCancelledError);
    expect((await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId }))?.state).toBe('in-flight');

    // The redelivered message resumes it under the same key.
    const resumed = await executeToolCall(request, deps);
    expect(resumed).toMatchObject({ ok: true, result: { booked: 'seat 12A' }, execution: 'resumed' });
    expect(hook.requests.map((r) => r.idempotencyKey)).toEqual([request.toolCallId, request.toolCallId]);
    expect(hook.requests.every((r) => r.signatureValid)).toBe(true);

    expect(await executeToolCall(request, deps)).toMatchObject({
      result: { booked: 'seat 12A' },
      execution: 'replayed',
    });
    expect(hook.countFor(request.toolCallId)).toBe(2);
  });

  it('a call left in flight by a dead process is resumed', async () => {
    const request = call();
    await ledger.begin(
      { tenantId: 'acme', toolCallId: request.toolCallId },
      { conversationId: 'conv-1', name: 'get_weather' },
    );
    expect(await executeToolCall(request, deps)).toMatchObject({ ok: true, execution: 'resumed' });
    expect(hook.countFor(request.toolCallId)).toBe(1);
  });

  it('two executors racing on one call both answer the single recorded outcome', async () => {
    const request = call();
    const [a, b] = await Promise.all([executeToolCall(request, deps), executeToolCall(request, deps)]);
    const stored = (await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId }))?.outcome;
    const { execution: _a, ...outcomeA } = a;
    const { execution: _b, ...outcomeB } = b;
    expect(outcomeA).toEqual(stored);
    expect(outcomeB).toEqual(stored);
    // Both may have reached the webhook; if so, under one Idempotency-Key.
    expect(new Set(hook.requests.map((r) => r.idempotencyKey))).toEqual(new Set([request.toolCallId]));
  });

  it('the same toolCallId in another tenant is another call', async () => {
    const request = call();
    await executeToolCall(request, deps);
    expect(await executeToolCall({ ...request, tenantId: 'globex' }, deps)).toMatchObject({
      execution: 'executed',
    });
    expect(hook.countFor(request.toolCallId)).toBe(2);
  });

  it('a webhook failure is a recorded tool error the model can read', async () => {
    hook.reply(() => ({ status: 404, body: 'no such city' }));
    const request = call();
    const result = await executeToolCall(request, deps);
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'webhook_status_404', message: 'the webhook answered 404 Not Found: no such city' },
      attempts: 1,
      execution: 'executed',
    });
    expect(await executeToolCall(request, deps)).toMatchObject({ ok: false, execution: 'replayed' });
    expect(hook.countFor(request.toolCallId)).toBe(1);
  });
});

describe('executeToolCall: checks before anything runs', () => {
  it('a webhook answer nested deeper than 64 levels is a tool error, recorded once', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    hook.reply(() => ({ status: 200, body: deep }));
    const request = call();
    const result = await executeToolCall(request, deps);
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'webhook_invalid_json' },
      execution: 'executed',
    });
    expect((result as { error: { message: string } }).error.message).toContain('deeper than 64 levels');
    const record = await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId });
    expect(JSON.stringify(record?.outcome)).toContain('webhook_invalid_json');
  });

  it('invalid arguments never reach the webhook; the problems are listed and recorded', async () => {
    const request = call({ args: { town: 'Lyon', days: 30 } });
    const result = await executeToolCall(request, deps);
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'invalid_arguments',
        message:
          'invalid arguments: $.city is required; $.town is not an allowed property; remove it; $.days must be <= 14',
      },
      attempts: 0,
      execution: 'executed',
    });
    expect(hook.requests).toHaveLength(0);
    expect((await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId }))?.state).toBe('completed');
  });

  it('a tool needing approval is refused without it, records nothing, and runs once approved', async () => {
    const request = call({ tool: weatherTool({ approval: 'always' }) });
    const refused = await executeToolCall(request, deps);
    expect(refused).toEqual({
      ok: false,
      error: {
        code: 'approval_required',
        message: "get_weather needs a user's approval, and it was not given",
      },
      attempts: 0,
      durationMs: 0,
      execution: 'refused',
    });
    expect(hook.requests).toHaveLength(0);
    expect(await ledger.get({ tenantId: 'acme', toolCallId: request.toolCallId })).toBeUndefined();

    expect(await executeToolCall({ ...request, approvalGranted: true }, deps)).toMatchObject({
      ok: true,
      execution: 'executed',
    });
    // Once completed, a redelivery is answered whatever it says about approval.
    expect(await executeToolCall(request, deps)).toMatchObject({ ok: true, execution: 'replayed' });
    expect(hook.countFor(request.toolCallId)).toBe(1);
  });

  it.each([
    [() => ({ webhookSecret: undefined }), /no webhook secret/],
    [() => ({ tool: weatherTool({ url: undefined }) }), /has no URL/],
    [() => ({ tool: weatherTool({ timeoutMs: 0 }) }), /timeoutMs must be a positive number/],
    [
      () => ({ tool: weatherTool({ inputSchema: { type: 'object', properties: { a: { type: 'nope' } } } }) }),
      /input ?Schema is not a valid JSON Schema/i,
    ],
    [
      () => ({ name: 'get_weather_v2' }),
      /the call names get_weather_v2 but the tool definition is get_weather/,
    ],
    [() => ({ tool: builtin('teleport'), name: 'teleport' }), /no built-in tool named teleport/],
  ])('a misconfigured tool is a tool error, never a call (%#)', async (overrides, message) => {
    const result = await executeToolCall(call(overrides()), deps);
    expect(result).toMatchObject({ ok: false, error: { code: 'tool_misconfigured' }, attempts: 0 });
    expect(result.ok === false && result.error.message).toMatch(message);
    expect(hook.requests).toHaveLength(0);
  });
});

describe('executeToolCall: built-ins', () => {
  it('runs calculator and records its result', async () => {
    const request = call({ tool: builtin('calculator'), args: { expression: '2^10 - 24' } });
    expect(await executeToolCall(request, deps)).toMatchObject({
      ok: true,
      result: { expression: '2^10 - 24', result: 1000 },
      attempts: 1,
      execution: 'executed',
    });
    expect(await executeToolCall(request, deps)).toMatchObject({
      result: { result: 1000 },
      execution: 'replayed',
    });
  });

  it("a built-in's refusal is a tool error with its own code", async () => {
    expect(
      await executeToolCall(call({ tool: builtin('calculator'), args: { expression: '1/0' } }), deps),
    ).toMatchObject({
      ok: false,
      error: { code: 'division_by_zero', message: 'division by zero (at position 2)' },
    });
    expect(
      await executeToolCall(
        call({ tool: builtin('current_time'), args: { timezone: 'Mars/Olympus' } }),
        deps,
      ),
    ).toMatchObject({ ok: false, error: { code: 'unknown_timezone' } });
  });

  it("a built-in's arguments are checked against its own schema, not the tenant's copy", async () => {
    const result = await executeToolCall(call({ tool: builtin('calculator'), args: { expr: '1+1' } }), deps);
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'invalid_arguments',
        message: 'invalid arguments: $.expression is required; $.expr is not an allowed property; remove it',
      },
    });
  });

  it('current_time reads the injected clock', async () => {
    const result = await executeToolCall(
      call({ tool: builtin('current_time'), args: { timezone: 'Europe/Paris' } }),
      deps,
    );
    expect(result).toMatchObject({ ok: true, result: { local: '2025-03-10 13:00:00', offset: '+01:00' } });
  });

  it("an unexpected built-in failure is reported to the logs, and the model reads only 'builtin_failed'", async () => {
    const seen: unknown[] = [];
    const exploding: BuiltinTool = {
      name: 'explode',
      description: 'fails',
      inputSchema: { type: 'object' },
      execute: () => {
        throw new Error('secret internal detail');
      },
    };
    const result = await executeToolCall(call({ tool: builtin('explode'), name: 'explode', args: {} }), {
      ...deps,
      builtins: [exploding],
      onUnexpectedError: (error) => seen.push(error),
    });
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'builtin_failed', message: 'the built-in tool explode failed' },
    });
    expect(JSON.stringify(result)).not.toContain('secret internal detail');
    expect(seen).toHaveLength(1);
  });
});

const waitFor = async (condition: () => boolean): Promise<void> => {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 5));
  }
};
