import { readFileSync } from 'node:fs';
import path from 'node:path';
import { registry } from '../../../lib/telemetry/metrics';

/** docs/grafana-dashboard.json imports into Grafana and queries only series the service exposes. */
describe('Grafana dashboard', () => {
  const doc = JSON.parse(readFileSync(path.resolve(__dirname, '../../../docs/grafana-dashboard.json'), 'utf8'));
  const panels = (doc.panels as { type: string; title: string; targets?: { expr: string; datasource: { uid: string } }[] }[]).filter((p) => p.type !== 'row');

  it('has a uid, a title and a Prometheus data-source variable every query uses', () => {
    expect(doc.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(doc.title).toEqual(expect.any(String));
    expect(doc.templating.list).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' })]));
    for (const p of panels) {
      expect(p.targets?.length).toBeGreaterThan(0);
      for (const t of p.targets!) expect(t.datasource.uid).toBe('${datasource}');
    }
  });

  it('queries only series of the registry (histograms by their _bucket and _count)', async () => {
    const names = new Set<string>();
    for (const m of await registry.getMetricsAsJSON()) {
      names.add(m.name);
      for (const suffix of ['_bucket', '_count', '_sum']) names.add(m.name + suffix);
    }
    const used = panels.flatMap((p) => p.targets!.flatMap((t) => [...t.expr.matchAll(/\b((?:meshsync|process|nodejs)_[a-z_]+)\b/g)].map((m) => m[1])));
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((n) => !names.has(n))).toEqual([]);
  });

  it('has the panels an operator looks for', () => {
    const all = JSON.stringify(panels);
    for (const series of [
      'meshsync_runs_total',
      'meshsync_run_duration_seconds_bucket',
      'meshsync_pending_exports',
      'meshsync_connector_space_errors',
      'meshsync_http_request_duration_seconds',
      'meshsync_instance_heartbeat_age_seconds',
    ]) {
      expect(all).toContain(series);
    }
    expect(all).toContain('histogram_quantile');
  });
});
