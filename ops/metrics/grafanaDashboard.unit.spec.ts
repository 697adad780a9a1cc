import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { METRIC_FAMILIES, ServiceMetrics } from './ServiceMetrics.ts';

/** docs/grafana-dashboard.json, as Grafana imports it. */
interface Target {
  expr?: unknown;
}
interface Panel {
  id?: unknown;
  type?: unknown;
  title?: unknown;
  gridPos?: unknown;
  datasource?: unknown;
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  title?: unknown;
  uid?: unknown;
  schemaVersion?: unknown;
  panels?: Panel[];
  templating?: { list?: Array<{ name?: unknown; type?: unknown; query?: unknown }> };
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'offset', 'bool', 'inf', 'nan']);

/**
 * The series a PromQL expression names: what is left once strings, label matchers, ranges and
 * by/without clauses are removed, less functions (a name followed by `(`) and keywords.
 */
const seriesNamedIn = (expr: string): string[] => {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring)\s*\([^)]*\)/g, ' ');
  return [...bare.matchAll(/\b[a-zA-Z_:][\w:]*\b(?!\s*\()/g)].map((match) => match[0]).filter((word) => !PROMQL_WORDS.has(word.toLowerCase()));
};

const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as Dashboard;
const panelsOf = (panels: Panel[] = []): Panel[] => panels.flatMap((panel) => [panel, ...panelsOf(panel.panels)]);
const panels = panelsOf(dashboard.panels);
const exprs = panels.flatMap((panel) => (panel.targets ?? []).map((target) => String(target.expr)));
const templateQueries = (dashboard.templating?.list ?? [])
  .filter((variable) => variable.type === 'query')
  .map((variable) => (typeof variable.query === 'string' ? variable.query : String((variable.query as { query?: unknown }).query)));

describe('docs/grafana-dashboard.json', () => {
  const exported = new ServiceMetrics({ slotsBusy: () => 0, slotsCapacity: () => 0, projectionLag: async () => 0 }).seriesNames();

  it('given the reader of expressions, when an expression names a series, then it finds exactly the series and not the functions, labels or ranges', () => {
    expect(seriesNamedIn('histogram_quantile(0.95, sum by (le, route) (rate(orchestrator_http_request_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))')).to.deep.equal([
      'orchestrator_http_request_duration_seconds_bucket',
    ]);
    expect(seriesNamedIn('max by (instance) (orchestrator_nope_total{a="b"}) / process_cpu_seconds_total')).to.deep.equal(['orchestrator_nope_total', 'process_cpu_seconds_total']);
  });

  it('given the file, when parsed, then it is a Grafana dashboard: title, uid, schema version, panels with unique ids and grid positions, on the datasource variable', () => {
    expect(dashboard.title).to.be.a('string');
    expect(dashboard.uid).to.be.a('string');
    expect(dashboard.schemaVersion).to.be.a('number');
    expect(panels.length).to.be.greaterThan(8);
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size, 'panel ids').to.equal(ids.length);
    for (const panel of panels) {
      expect(panel.gridPos, String(panel.title)).to.include.keys('h', 'w', 'x', 'y');
      if (panel.type !== 'row') expect(panel.datasource, String(panel.title)).to.deep.equal({ type: 'prometheus', uid: '${datasource}' });
    }
    expect((dashboard.templating?.list ?? []).map((variable) => variable.name)).to.include('datasource');
  });

  it('given every query of the dashboard, when the series it names are listed, then each is one the service exports', () => {
    expect(exprs.length).to.be.greaterThan(8);
    for (const expr of exprs) {
      const named = seriesNamedIn(expr);
      expect(named.length, `names no series: ${expr}`).to.be.greaterThan(0);
      for (const series of named) expect(exported.has(series), `${series} in ${expr}`).to.equal(true);
    }
    for (const query of templateQueries) {
      const series = /label_values\(\s*([a-zA-Z_:][\w:]*)/.exec(query)?.[1];
      expect(series, query).to.be.a('string');
      expect(exported.has(String(series)), query).to.equal(true);
    }
  });

  it('given the pinned families, when the queries are read, then each family is charted, with the process memory and CPU', () => {
    const named = new Set(exprs.flatMap(seriesNamedIn));
    for (const family of Object.values(METRIC_FAMILIES)) {
      expect([family, `${family}_bucket`, `${family}_count`].some((series) => named.has(series)), family).to.equal(true);
    }
    expect(named).to.include.all.keys('process_resident_memory_bytes', 'process_cpu_seconds_total');
    const quantiles = exprs.filter((expr) => expr.startsWith('histogram_quantile('));
    for (const family of ['orchestrator_task_run_duration_seconds', 'orchestrator_task_queue_wait_seconds', 'orchestrator_http_request_duration_seconds', 'orchestrator_event_store_append_duration_seconds']) {
      expect(quantiles.some((expr) => expr.includes(`${family}_bucket`)), `${family} quantiles`).to.equal(true);
    }
  });
});
