// The Grafana dashboards and Prometheus alert rules against the code: every PromQL expression in
// deploy/grafana/*.json and deploy/prometheus/*.yaml may name only series the services really
// export on /metrics (the runtime's registry, as every service builds it), and only the labels
// those series carry.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OutboxRelay } from '@keel/core';
import { ServiceMetrics, createMetricsRegistry, processMetrics } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

const root = fileURLToPath(new URL('../', import.meta.url));
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const filesIn = (dir: string, ext: string): string[] =>
  readdirSync(join(root, dir))
    .filter((name) => name.endsWith(ext))
    .map((name) => join(dir, name));

/** Every series name a service's /metrics can show, with its labels (histograms: their three series). */
const exportedSeries = async (): Promise<Map<string, Set<string>>> => {
  const registry = createMetricsRegistry();
  new ServiceMetrics(registry, 'gateway');
  // The relay is only read at scrape time; the series exist without one running.
  const relay = {
    stats: { published: 0, position: 0, holdsLease: false },
    oldestUnpublished: () => Promise.resolve(undefined),
    onPublished: () => undefined,
  } as unknown as OutboxRelay;
  processMetrics(registry, 'gateway', relay);
  const series = new Map<string, Set<string>>();
  for (const metric of await registry.getMetricsAsJSON()) {
    const labels = new Set(
      (registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] }).labelNames ?? [],
    );
    if (String(metric.type) === 'histogram') {
      series.set(`${metric.name}_bucket`, new Set([...labels, 'le']));
      series.set(`${metric.name}_sum`, labels);
      series.set(`${metric.name}_count`, labels);
    } else {
      series.set(metric.name, labels);
    }
  }
  return series;
};

/** What an expression names: series with the labels matched on each, and labels grouped by. */
interface Names {
  series: Array<{ name: string; matched: string[] }>;
  grouped: string[];
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'group_left', 'group_right']);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring']);
const TOKEN =
  /\s+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\{[^}]*\}|\[[^\]]*\]|\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_:][A-Za-z0-9_:]*|\$__\w+|./gy;

/** A small PromQL scanner: enough for the names an expression uses (functions are what `(` follows). */
export const namesOf = (expr: string): Names => {
  const tokens = [...expr.matchAll(TOKEN)].map((m) => m[0]).filter((t) => t.trim() !== '');
  const names: Names = { series: [], grouped: [] };
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!/^[A-Za-z_:]/.test(token) || KEYWORDS.has(token)) continue;
    const next = tokens[i + 1];
    if (GROUPING.has(token) && next === '(') {
      for (i += 2; i < tokens.length && tokens[i] !== ')'; i++) {
        if (tokens[i] !== ',') names.grouped.push(tokens[i]!);
      }
      continue;
    }
    if (next === '(' || GROUPING.has(next ?? '')) continue; // a function, or an aggregation (`sum by (…) (…)`)
    const matched = next?.startsWith('{')
      ? [...next.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]!)
      : [];
    names.series.push({ name: token, matched });
  }
  return names;
};

interface Expression {
  where: string;
  expr: string;
}

const dashboardExpressions = (): Expression[] =>
  filesIn('deploy/grafana', '.json').flatMap((path) => {
    const dashboard = JSON.parse(read(path)) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    return dashboard.panels.flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({ where: `${path}: ${panel.title}`, expr: target.expr })),
    );
  });

const alertExpressions = (): Expression[] =>
  filesIn('deploy/prometheus', '.yaml').flatMap((path) => {
    const rules = parseYaml(read(path)) as {
      groups: Array<{ name: string; rules: Array<{ alert?: string; record?: string; expr: string }> }>;
    };
    return rules.groups.flatMap((group) =>
      group.rules.map((rule) => ({ where: `${path}: ${rule.alert ?? rule.record}`, expr: rule.expr })),
    );
  });

describe('Grafana dashboards and Prometheus alerts', () => {
  it('reads PromQL names: series, matched labels and grouping labels, not functions or keywords', () => {
    expect(
      namesOf(
        'histogram_quantile(0.95, sum by (le, route) (rate(keel_x_bucket{service="gateway", route!~".*/events"}[5m]))) > 1e-9',
      ),
    ).toEqual({
      series: [{ name: 'keel_x_bucket', matched: ['service', 'route'] }],
      grouped: ['le', 'route'],
    });
    expect(namesOf('sum(rate(a[5m])) / clamp_min(sum(b), 1) and on (tenant) c * 60')).toEqual({
      series: [
        { name: 'a', matched: [] },
        { name: 'b', matched: [] },
        { name: 'c', matched: [] },
      ],
      grouped: ['tenant'],
    });
  });

  it('cover what operators watch: routes, turns, first token, tools, relay, consumers, dead letters, cost per tenant', () => {
    const used = new Set(
      dashboardExpressions().flatMap(({ expr }) => namesOf(expr).series.map((s) => s.name)),
    );
    for (const name of [
      'keel_http_request_duration_seconds_count',
      'keel_http_request_duration_seconds_bucket',
      'keel_turns_finished_total',
      'keel_turn_time_to_first_token_seconds_bucket',
      'keel_tool_call_duration_seconds_count',
      'keel_tool_call_duration_seconds_bucket',
      'keel_outbox_lag_seconds',
      'keel_consumer_pending_events',
      'keel_consumer_redeliveries_total',
      'keel_consumer_dead_letters_total',
      'keel_tenant_cost_usd_total',
    ]) {
      expect(used, name).toContain(name);
    }
    expect(alertExpressions().length).toBeGreaterThanOrEqual(10);
  });

  it('name only series /metrics exports, with labels those series have', async () => {
    const exported = await exportedSeries();
    const expressions = [...dashboardExpressions(), ...alertExpressions()];
    expect(expressions.length).toBeGreaterThan(20);
    for (const { where, expr } of expressions) {
      const { series, grouped } = namesOf(expr);
      expect(series.length, `${where}: no series in ${expr}`).toBeGreaterThan(0);
      const labels = new Set<string>();
      for (const { name, matched } of series) {
        const known = exported.get(name);
        expect(known, `${where}: ${name} is not exported`).toBeDefined();
        for (const label of known!) labels.add(label);
        for (const label of matched)
          expect(known, `${where}: ${name} has no label ${label}`).toContain(label);
      }
      for (const label of grouped) expect(labels, `${where}: grouped by ${label}`).toContain(label);
    }
  });
});
