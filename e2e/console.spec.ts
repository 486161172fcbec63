// The operator console in a real browser (Debian's Chromium driven by playwright-core) against the
// platform as separate processes on NATS and FerretDB: gateway, agent, tools, audit and pricing,
// the model played by the fake OpenAI server. What a person does there: a wrong key is refused;
// the operator sees a tenant and its cost this month, watches a turn appear live while it runs,
// opens it, approves its pending approval with the button and sees the turn complete; usage
// switches time zone and the chart moves to the other calendar day; the CSV's totals are those of
// GET /v1/usage, and the Overview's figures follow the same zone; a turn running before the page
// opened is listed and completes live; the tenant's team runs are listed, each task opening its
// conversation; another approval is denied; a dead letter is replayed; bad input (budget -5,
// empty tenant name) shows a message and changes nothing; a key that stops working sends the
// console back to sign-in; a tenant admin sees no other tenant.
// A screenshot of each page goes to CONSOLE_SCREENSHOTS (docs/console to refresh the README's).
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoDeadLetterStore, MongoEventStore } from '@keel/core/mongodb';
import type { ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes } from '@keel/testkit';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureConsoleBuilt, launchChromium } from './support/console.js';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf } from './support/http.js';
import { startAudit } from './support/platform.js';

interface TenantRow {
  id: string;
  name: string;
  monthlyUsd: number | null;
  costMonthUsd: number | null;
}
interface UsageBody {
  totals: { promptTokens: number; completionTokens: number; costUsd: number; turns: number };
  rows: Array<{ key: string }>;
}

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
/** Dollars as the console shows them: under a cent with two significant digits. */
const dollars = (value: number): string =>
  value !== 0 && Math.abs(value) < 0.01 ? `$${Number(value.toPrecision(2))}` : usd.format(value);
const dayIn = (timeZone: string, at = new Date()): string =>
  new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    at,
  );

/** A zone whose calendar day differs from UTC's right now: UTC-11 before 10:00 UTC, UTC+14 after. */
const otherDayZone = (): string =>
  new Date().getUTCHours() < 10 ? 'Pacific/Pago_Pago' : 'Pacific/Kiritimati';

describe('the operator console in Chromium (gateway, agent, tools, audit, pricing as processes)', () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let shots = '';
  const acme = { id: '', keys: { admin: '', editor: '' } };
  const globex = { id: '', keys: { admin: '' } };
  let conversationId = '';

  const get = async (path: string, key = platform.operatorKey, headers: Record<string, string> = {}) =>
    answerOf(await platform.request('GET', path, key, undefined, headers));
  const tenants = async () => ((await get('/v1/tenants')).body as { data: TenantRow[] }).data;
  const acmeRow = async () => (await tenants()).find((tenant) => tenant.id === acme.id)!;
  const consoleUrl = (path = '') => `${platform.base}/console${path}`;
  const shoot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  const alert = () => page.getByRole('alert').first();
  /** A page link of the console's navigation. */
  const goTo = (name: string) =>
    page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();

  const signIn = async (key: string) => {
    await page.goto(consoleUrl());
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  /** Runs one turn of Acme's support agent that answers at once, and waits for it to be idle. */
  const quickTurn = async () => {
    platform.fake.on(
      lastUserMessageIncludes('hello'),
      fakeReply.text('Hello! How can I help?', {
        usage: { promptTokens: 120_000, completionTokens: 30_000 },
      }),
    );
    const created = await platform.request('POST', '/v1/conversations', acme.keys.editor, {
      agentId: 'support',
    });
    const id = ((await created.json()) as { id: string }).id;
    expect(
      (
        await platform.request('POST', `/v1/conversations/${id}/messages`, acme.keys.editor, {
          content: 'hello',
        })
      ).status,
    ).toBe(202);
    await eventually(
      async () =>
        expect((await get(`/v1/conversations/${id}`, acme.keys.editor)).body).toMatchObject({
          status: 'idle',
        }),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
  };

  beforeAll(async () => {
    shots = process.env.CONSOLE_SCREENSHOTS ?? (await mkdtemp(join(tmpdir(), 'keel-console-shots-')));
    await mkdir(shots, { recursive: true });
    await ensureConsoleBuilt();
    const auditPort = await freePort();
    platform = await startGatewayPlatform('console', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
      pricingFor: ['agent'],
    });
    audit = await startAudit(platform.env, auditPort);
    Object.assign(acme, await platform.tenantWithKeys('Acme Console', ['admin', 'editor'] as const));
    Object.assign(globex, await platform.tenantWithKeys('Globex Console', ['admin'] as const));
    await platform.configureSupportAgent(acme.keys.admin);
    await quickTurn();
    // The month's cost reaches the tenant list through the audit service's rollups.
    await eventually(async () => expect((await acmeRow()).costMonthUsd).toBeGreaterThan(0), {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    browser = await launchChromium();
    // The browser's zone, the console's default, is UTC here; the usage test picks another.
    context = await browser.newContext({
      viewport: { width: 1280, height: 800 },
      acceptDownloads: true,
      timezoneId: 'UTC',
    });
    page = await context.newPage();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('the gateway serves the console at /console and its pages, with or without the trailing slash', async () => {
    for (const path of ['/console', '/console/', '/console/usage', '/console/conversations/c1/']) {
      const answer = await answerOf(await fetch(`${platform.base}${path}`));
      expect(answer.status, path).toBe(200);
      expect(answer.contentType, path).toMatch(/^text\/html/);
      expect(answer.text, path).toContain('<div id="root"></div>');
      expect(answer.headers.get('content-security-policy'), path).toContain("frame-ancestors 'none'");
    }
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(
      (await answerOf(await fetch(consoleUrl()))).text,
    )?.[1];
    expect((await fetch(`${platform.base}${script}`)).headers.get('content-type')).toMatch(
      /^text\/javascript/,
    );
    expect((await fetch(`${platform.base}/console/assets/missing.js`)).status).toBe(404);
    const post = await fetch(consoleUrl(), { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('a wrong key is refused with a clear message, and the console stays at sign-in', async () => {
    await signIn('keel_this_is_not_a_key_at_all');
    await expect.poll(async () => alert().textContent()).toContain('not accepted (401)');
    await expect.poll(async () => page.getByLabel('API key').isVisible()).toBe(true);
    await shoot('sign-in');
  });

  it('the operator key shows every tenant with its cost this month', async () => {
    await signIn(platform.operatorKey);
    await goTo('Tenants');
    const cost = (await acmeRow()).costMonthUsd!;
    const row = page.getByRole('row').filter({ hasText: 'Acme Console' });
    await expect.poll(async () => row.textContent()).toContain(dollars(cost));
    await expect
      .poll(async () => page.getByRole('row').filter({ hasText: 'Globex Console' }).count())
      .toBe(1);
  });

  it('bad input (a budget of -5, an empty tenant name) shows a message and changes nothing', async () => {
    const before = await tenants();
    await page.getByRole('row').filter({ hasText: 'Acme Console' }).click();
    await page.getByLabel('Monthly budget (USD)').fill('-5');
    await page.getByRole('button', { name: 'Set budget' }).click();
    await expect
      .poll(async () => alert().textContent())
      .toContain('Monthly budget: enter an amount in USD of 0 or more');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await expect.poll(async () => page.getByRole('alert').filter({ hasText: 'Tenant name' }).count()).toBe(1);
    expect(await tenants()).toEqual(before);
    expect((await acmeRow()).monthlyUsd).toBeNull();
  });

  it('sets a budget, shown against the cost; issues a key shown once that works', async () => {
    await page.getByLabel('Monthly budget (USD)').fill('25');
    await page.getByRole('button', { name: 'Set budget' }).click();
    await expect.poll(async () => (await acmeRow()).monthlyUsd).toBe(25);
    const row = page.getByRole('row').filter({ hasText: 'Acme Console' });
    await expect.poll(async () => row.textContent()).toContain('of $25.00');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('issued-key').textContent({ timeout: 10_000 }))!;
    expect((await get('/v1/me', key)).body).toMatchObject({ role: 'viewer', tenant: { id: acme.id } });
    await shoot('tenants');
  });

  it('watches a turn appear live while it runs, opens it and approves its pending approval', async () => {
    await goTo('Overview');
    await expect.poll(async () => page.getByText(/^live ·/).count(), { timeout: 15_000 }).toBe(1);
    platform.fake.on(
      lastUserMessageIncludes('refund 20 on B-2'),
      fakeReply.toolCall('refund', { id: 'B-2', amount: 20 }),
      fakeReply.text('Refunded 20 on B-2.'),
    );
    const created = await platform.request('POST', '/v1/conversations', acme.keys.editor, {
      agentId: 'support',
    });
    conversationId = ((await created.json()) as { id: string }).id;
    const sent = await platform.request(
      'POST',
      `/v1/conversations/${conversationId}/messages`,
      acme.keys.editor,
      {
        content: 'Please refund 20 on B-2',
      },
    );
    expect(sent.status).toBe(202);

    // The turn shows up in the live list while it runs: it cannot end before the approval.
    const liveRow = page.getByRole('row').filter({ hasText: conversationId });
    await expect.poll(async () => liveRow.textContent(), { timeout: 30_000 }).toContain('awaiting approval');
    expect((await get(`/v1/conversations/${conversationId}`, acme.keys.editor)).body).toMatchObject({
      status: 'awaiting_approval',
    });
    await shoot('overview');

    await liveRow.getByRole('link', { name: conversationId }).click();
    const timeline = page.getByRole('list', { name: 'Timeline' });
    await expect
      .poll(async () => timeline.textContent(), { timeout: 15_000 })
      .toContain('Approval needed: refund');
    expect(await timeline.textContent()).toContain('Please refund 20 on B-2');
    expect(await timeline.textContent()).toContain('"B-2"');
    await shoot('conversation');

    await goTo('Approvals');
    const card = page.getByRole('listitem').filter({ hasText: 'refund' });
    await expect
      .poll(async () => card.getByRole('button', { name: 'Approve' }).count(), { timeout: 15_000 })
      .toBe(1);
    await shoot('approvals');
    await page.goBack();

    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect.poll(async () => timeline.textContent(), { timeout: 30_000 }).toContain('Turn completed');
    const text = (await timeline.textContent())!;
    expect(text).toMatch(/Approved by/);
    expect(text).toContain('Result of refund');
    expect(text).toContain('Refunded 20 on B-2.');
    expect((await get(`/v1/conversations/${conversationId}`, acme.keys.editor)).body).toMatchObject({
      status: 'idle',
    });
    await shoot('conversation-completed');
  });

  it('lists the tenant’s conversations and follows its events feed', async () => {
    await goTo('Conversations');
    await expect
      .poll(async () => page.getByRole('link', { name: conversationId }).count(), { timeout: 15_000 })
      .toBe(1);
    // The tenant's own events feed (GET /v1/events, the operator acting with X-Keel-Tenant) is open.
    await expect.poll(async () => page.getByText(/^live ·/).count(), { timeout: 15_000 }).toBe(1);
    await shoot('conversations');
  });

  it('usage: another time zone moves the chart to the other calendar day; the CSV totals are the API’s', async () => {
    await goTo('Usage');
    await page.getByLabel('Tenants').selectOption(acme.id);
    const table = page.getByRole('table', { name: 'Usage rows' });
    const today = dayIn('UTC');
    await expect
      .poll(async () => table.locator('tbody tr').first().textContent(), { timeout: 30_000 })
      .toContain(today);
    await expect
      .poll(async () => table.locator('tfoot th').last().textContent(), { timeout: 30_000 })
      .toBe('2');
    const chartBefore = await page.getByTestId('usage-chart').innerHTML();
    await shoot('usage');

    const zone = otherDayZone();
    const other = dayIn(zone);
    expect(other).not.toBe(today);
    await page.getByLabel('Time zone').selectOption(zone);
    await expect
      .poll(async () => table.locator('tbody tr').first().textContent(), { timeout: 15_000 })
      .toContain(other);
    expect(await table.locator('tbody').textContent()).not.toContain(today);
    expect(await page.getByTestId('usage-chart').innerHTML()).not.toBe(chartBefore);

    const from = await page.getByLabel('From', { exact: true }).inputValue();
    const to = await page.getByLabel('To', { exact: true }).inputValue();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const csv = (await readFile((await download.path())!, 'utf8')).trim().split(/\r?\n/);
    expect(csv[0]).toBe('key,promptTokens,completionTokens,costUsd,turns');
    const sums = [0, 0, 0, 0];
    for (const line of csv.slice(1)) {
      line
        .split(',')
        .slice(-4)
        .forEach((value, index) => (sums[index]! += Number(value)));
    }
    const api = (
      await get(
        `/v1/usage?from=${from}&to=${to}&tz=${encodeURIComponent(zone)}&groupBy=day&tenantId=${acme.id}`,
      )
    ).body as UsageBody;
    expect(csv.slice(1).map((line) => line.split(',')[0])).toEqual(api.rows.map((row) => row.key));
    expect(sums[0]).toBe(api.totals.promptTokens);
    expect(sums[1]).toBe(api.totals.completionTokens);
    expect(sums[2]).toBeCloseTo(api.totals.costUsd, 9);
    expect(sums[3]).toBe(api.totals.turns);
    expect(api.totals.turns).toBe(2);

    // The Overview shares the zone: its figures are the overview's in that zone, and say so.
    await goTo('Overview');
    expect(await page.getByLabel('Time zone').inputValue()).toBe(zone);
    const overview = (await get(`/v1/operator/overview?tz=${encodeURIComponent(zone)}`)).body as {
      costTodayUsd: number;
    };
    const costToday = page.locator('.stat').filter({ hasText: 'Cost today' });
    await expect.poll(async () => costToday.textContent(), { timeout: 15_000 }).toContain(zone);
    expect(await costToday.textContent()).toContain(dollars(overview.costTodayUsd));
    await page.getByLabel('Time zone').selectOption('UTC');
    await expect.poll(async () => costToday.textContent(), { timeout: 15_000 }).toContain('UTC');
  });

  it('a turn running before the page opened (a slow model, no approval) is listed, then completes live', async () => {
    platform.fake.on(
      lastUserMessageIncludes('where is my parcel'),
      fakeReply.text('Checking the warehouse now, one moment.', { chunkSize: 2, chunkDelayMs: 600 }),
    );
    const created = await platform.request('POST', '/v1/conversations', acme.keys.editor, {
      agentId: 'support',
    });
    const id = ((await created.json()) as { id: string }).id;
    await platform.request('POST', `/v1/conversations/${id}/messages`, acme.keys.editor, {
      content: 'where is my parcel?',
    });
    await expect
      .poll(
        async () =>
          ((await get(`/v1/conversations/${id}`, acme.keys.editor)).body as { status: string }).status,
        { timeout: 30_000, interval: 100 },
      )
      .toBe('running');
    // Listed from the activity projection of the global log, which places commits a moment later.
    const running = async () =>
      (
        (await get('/v1/turns?status=running', platform.operatorKey)).body as {
          data: Array<{ conversationId: string }>;
        }
      ).data.map((turn) => turn.conversationId);
    await expect.poll(running, { timeout: 10_000, interval: 100 }).toContain(id);
    // A fresh page: its feed starts at the head of the log, after this turn's turn.started.
    await page.goto(consoleUrl());
    const row = page.getByRole('region', { name: 'Live turns' }).getByRole('row').filter({ hasText: id });
    await expect.poll(async () => row.textContent(), { timeout: 10_000 }).toContain('running');
    await expect.poll(async () => row.textContent(), { timeout: 30_000 }).toContain('completed');
  });

  it('the Conversations page lists the tenant’s team runs, each task opening its conversation', async () => {
    platform.fake.on(lastUserMessageIncludes('Summarise the week'), fakeReply.text('A quiet week.'));
    const team = await platform.request('PUT', '/v1/teams/desk', acme.keys.admin, {
      topology: 'pipeline',
      aggregation: 'last',
      members: [{ agentId: 'support', role: 'Desk', position: 1 }],
    });
    expect(team.status).toBe(200);
    const started = await platform.request('POST', '/v1/runs', acme.keys.editor, {
      teamId: 'desk',
      input: 'Summarise the week.',
    });
    expect(started.status).toBe(201);
    const runId = ((await started.json()) as { id: string }).id;
    await expect
      .poll(
        async () => ((await get(`/v1/runs/${runId}`, acme.keys.editor)).body as { status: string }).status,
        {
          timeout: 30_000,
        },
      )
      .toBe('completed');
    const run = (await get(`/v1/runs/${runId}`, acme.keys.editor)).body as {
      tasks: Array<{ conversationId: string }>;
    };
    await goTo('Conversations');
    const row = page.getByRole('table', { name: 'Runs' }).getByRole('row').filter({ hasText: runId });
    await expect.poll(async () => row.textContent(), { timeout: 15_000 }).toContain('completed');
    expect(await row.textContent()).toContain('desk');
    await row.getByRole('link').first().click();
    await expect
      .poll(() => page.url(), { timeout: 15_000 })
      .toContain(`/console/conversations/${run.tasks[0]!.conversationId}`);
    await expect
      .poll(async () => page.getByText('A quiet week.').count(), { timeout: 15_000 })
      .toBeGreaterThan(0);
  });

  it('a turn paused before the page opened is listed; Deny refuses it: the model gets the refusal and the turn ends', async () => {
    platform.fake.on(
      lastUserMessageIncludes('refund 5 on C-3'),
      fakeReply.toolCall('refund', { id: 'C-3', amount: 5 }),
      fakeReply.text('The refund of C-3 was not approved.'),
    );
    const created = await platform.request('POST', '/v1/conversations', acme.keys.editor, {
      agentId: 'support',
    });
    const id = ((await created.json()) as { id: string }).id;
    await platform.request('POST', `/v1/conversations/${id}/messages`, acme.keys.editor, {
      content: 'Please refund 5 on C-3',
    });
    await expect
      .poll(
        async () =>
          ((await get(`/v1/conversations/${id}`, acme.keys.editor)).body as { status: string }).status,
        {
          timeout: 30_000,
        },
      )
      .toBe('awaiting_approval');
    // Opened after the turn paused, the overview still lists it: pending approvals seed the live list.
    await goTo('Overview');
    await expect
      .poll(async () => page.getByRole('row').filter({ hasText: id }).textContent(), { timeout: 15_000 })
      .toContain('awaiting approval');
    await goTo('Approvals');
    const card = page.getByRole('listitem').filter({ hasText: '"C-3"' });
    await card.getByRole('button', { name: 'Deny' }).click({ timeout: 30_000 });
    await expect
      .poll(
        async () =>
          ((await get(`/v1/conversations/${id}`, acme.keys.editor)).body as { status: string }).status,
        {
          timeout: 30_000,
        },
      )
      .toBe('idle');
    const state = (await get(`/v1/conversations/${id}`, acme.keys.editor)).body as {
      messages: Array<{ role: string; content: string }>;
    };
    expect(state.messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: 'The refund of C-3 was not approved.',
    });
    expect(platform.webhook.hits.filter((hit) => hit.body.conversationId === id)).toHaveLength(0);
  });

  it('dead letters: listed, replayed with the button, then gone', async () => {
    const store = await MongoEventStore.connect(platform.env.MONGODB_URL!);
    const id = `dl-${randomUUID()}`;
    try {
      await new MongoDeadLetterStore(store.db).record({
        id,
        consumer: 'agent-conversation-index',
        tenantId: acme.id,
        event: {
          eventId: randomUUID(),
          type: 'PhaseChanged',
          data: { turnId: 't', from: 'a', to: 'b', toolCallId: 'x', at: new Date().toISOString() },
          metadata: { correlationId: 'console-dead-letter' },
          tenantId: acme.id,
          streamName: `conversation-${conversationId}`,
          version: 999,
          globalPosition: 999_999,
          commitId: randomUUID(),
          recordedAt: new Date().toISOString(),
        },
        error: 'handler failed: boom',
        deliveryCount: 5,
        deadAt: new Date().toISOString(),
      });
    } finally {
      await store.close();
    }
    await goTo('Dead letters');
    const row = page.getByRole('row').filter({ hasText: 'handler failed: boom' });
    await expect
      .poll(async () => row.textContent(), { timeout: 15_000 })
      .toContain('agent-conversation-index');
    await shoot('dead-letters');
    await row.getByRole('button', { name: 'Replay' }).click();
    await expect.poll(async () => page.getByRole('status').filter({ hasText: 'queued' }).count()).toBe(1);
    await expect.poll(async () => row.count(), { timeout: 15_000 }).toBe(0);
    expect(((await get('/v1/dead-letters')).body as { data: unknown[] }).data).toEqual([]);
  });

  it('works at phone width: every page link reachable, nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const name of ['Tenants', 'Conversations', 'Approvals', 'Usage', 'Dead letters', 'Overview']) {
      // The page links scroll sideways in their own strip: each is reachable.
      await page
        .getByRole('navigation', { name: 'Pages' })
        .getByRole('link', { name })
        .scrollIntoViewIfNeeded();
      await goTo(name);
      await expect.poll(async () => page.getByRole('heading', { level: 1, name }).count()).toBe(1);
      await expect.poll(async () => page.getByText(/^Loading /).count(), { timeout: 15_000 }).toBe(0);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth'), name).toBeLessThanOrEqual(
        390,
      );
      if (name === 'Usage') await shoot('phone-usage');
    }
    await expect.poll(async () => page.getByText('Cost this month').count()).toBeGreaterThan(0);
    await shoot('phone-overview');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('a key that stops working sends the console back to sign-in with a message', async () => {
    const issued = (
      await answerOf(
        await platform.request('POST', `/v1/tenants/${globex.id}/keys`, platform.operatorKey, {
          role: 'admin',
        }),
      )
    ).body as { id: string; key: string };
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(issued.key);
    await expect.poll(async () => page.getByRole('link', { name: 'Usage' }).count()).toBe(1);
    expect(
      (await platform.request('DELETE', `/v1/tenants/${globex.id}/keys/${issued.id}`, platform.operatorKey))
        .status,
    ).toBe(204);
    // The next call the console makes (a page's load, or a poll that may come first) gets a 401.
    await page.reload();
    await expect
      .poll(async () => page.getByRole('status').filter({ hasText: 'Signed out' }).count(), {
        timeout: 15_000,
      })
      .toBe(1);
    expect(await page.getByLabel('API key').isVisible()).toBe(true);
  });

  it('a tenant admin key sees its own tenant only, on every page', async () => {
    await signIn(globex.keys.admin);
    await expect.poll(async () => page.getByText('Globex Console').count()).toBeGreaterThan(0);
    for (const name of ['Overview', 'Tenants', 'Conversations', 'Approvals', 'Usage']) {
      await goTo(name);
      await expect.poll(async () => page.getByText(/^Loading /).count(), { timeout: 15_000 }).toBe(0);
      await page.waitForTimeout(300);
      expect(await page.locator('main').textContent(), name).not.toContain('Acme Console');
      expect(await page.locator('main').textContent(), name).not.toContain(conversationId);
      if (name === 'Overview') await shoot('admin-overview');
    }
    expect(await page.getByLabel('Tenant', { exact: true }).count()).toBe(0);
    await goTo('Tenants');
    await expect.poll(async () => page.locator('main').textContent()).toContain('Globex Console');
    await shoot('admin-tenant');
  });
});
