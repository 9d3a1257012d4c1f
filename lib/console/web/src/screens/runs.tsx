/* eslint-disable @typescript-eslint/no-explicit-any */
import { api, type Page } from '../api';
import { can, type Session } from '../auth';
import { href, navigate, setQuery, type Route } from '../router';
import { Action, ErrorBox, Field, Link, Pager, Status, Table, useInterval, useLoad, value, When, num } from '../ui';

export const RUN_STATUSES = ['Queued', 'Running', 'Completed', 'CompletedWithErrors', 'Failed', 'Cancelled', 'AwaitingApproval', 'Rejected'];
const LIVE = new Set(['Queued', 'Running']);

export function RunsScreen({ route, session }: { route: Route; session: Session }) {
  return route.segments[1] ? <RunMonitor key={route.segments[1]} id={route.segments[1]} route={route} session={session} /> : <RunList route={route} />;
}

export function runColumns(connectorName: (id: string) => string) {
  return [
    { label: 'Run', cell: (r: any) => <Link to={['runs', r.runId]}>{r.runId.slice(0, 8)}</Link>, width: '7em' },
    { label: 'Connector', cell: (r: any) => connectorName(r.connectorId) },
    { label: 'Type', cell: (r: any) => `${r.runType}${r.dryRun ? ' (dry run)' : ''}` },
    { label: 'Status', cell: (r: any) => <Status value={r.status} /> },
    { label: 'Started', cell: (r: any) => <When value={r.startedAt} /> },
    { label: 'Objects', cell: (r: any) => r.stats?.objectsProcessed ?? 0, width: '6em' },
  ];
}

export function useConnectorNames(): (id: string) => string {
  const { data } = useLoad<any>(() => api('GET', 'connectors'), []);
  return (id: string) => data?.connectors?.find((c: any) => c.id === id)?.name ?? id?.slice(0, 8) ?? '–';
}

/**
 * The names of connectors, rules and schedules by id (the first 200 rules and schedules), for pages that show
 * another resource: undefined while loading and for one that is gone.
 */
export function useNames(): {
  connector: (id: string) => string | undefined;
  rule: (id: string) => string | undefined;
  schedule: (id: string) => string | undefined;
} {
  const { data } = useLoad<{ connectors: any[]; rules: any[]; schedules: any[] }>(async () => {
    const [c, r, s] = await Promise.all([
      api<any>('GET', 'connectors'),
      api<Page<any>>('GET', 'rules', { query: { take: 200 } }),
      api<Page<any>>('GET', 'schedules', { query: { take: 200 } }),
    ]);
    return { connectors: c.connectors ?? [], rules: r.items ?? [], schedules: s.items ?? [] };
  }, []);
  return {
    connector: (id) => data?.connectors.find((c) => c.id === id)?.name,
    rule: (id) => data?.rules.find((r) => r.ruleId === id)?.ruleName || undefined,
    schedule: (id) => data?.schedules.find((s) => s.scheduleId === id)?.name,
  };
}

function RunList({ route }: { route: Route }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const names = useConnectorNames();
  const connectors = useLoad<any>(() => api('GET', 'connectors'), []);
  const { data, error, loading } = useLoad<Page<any>>(
    () => api('GET', 'runs', { query: { connectorId: q.get('connector'), status: q.get('status'), skip, take: 50 } }),
    [q.toString()],
  );
  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Runs</h1>
      <div class="filters">
        <Field label="Connector">
          <select value={q.get('connector') ?? ''} onChange={(e) => setQuery({ connector: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            {(connectors.data?.connectors ?? []).map((c: any) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Status">
          <select value={q.get('status') ?? ''} onChange={(e) => setQuery({ status: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            {RUN_STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorBox error={error} />
      <Table caption="Runs" columns={runColumns(names)} rows={data?.items} loading={loading} empty="No runs." rowKey={(r) => r.runId} />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </section>
  );
}

function RunMonitor({ id, route, session }: { id: string; route: Route; session: Session }) {
  const names = useConnectorNames();
  const { data: run, error, reload } = useLoad<any>(() => api('GET', `runs/${id}`), [id]);
  const live = !!run && LIVE.has(run.status);
  useInterval(reload, 1000, live);
  // A parked run: how many changes it would apply (the size of its changes list), for the approval's confirmation.
  const awaiting = run?.status === 'AwaitingApproval';
  const planned = useLoad<Page<any> | undefined>(
    () => (awaiting ? api('GET', `runs/${id}/changes`, { query: { take: 1 } }) : Promise.resolve(undefined)),
    [id, awaiting],
  );
  const p = run?.progress;
  const pct = p?.objectsTotal ? Math.min(100, Math.round((100 * p.objectsProcessed) / p.objectsTotal)) : undefined;
  return (
    <section aria-labelledby="run-title">
      <p class="crumbs">
        <Link to={['runs']}>Runs</Link> / {id.slice(0, 8)}
      </p>
      <h1 id="run-title">
        {run ? `${run.runType}${run.dryRun ? ' (dry run)' : ''} of ${names(run.connectorId)}` : 'Run …'} <Status value={run?.status} />
      </h1>
      <ErrorBox error={error} />
      <div class="progress-box" aria-live="polite">
        {live ? (
          <>
            <progress max={100} value={pct} aria-label="Run progress" />
            <span data-testid="progress-text">
              {p ? `${p.phase}: ${p.objectsProcessed}${p.objectsTotal ? ` of ${p.objectsTotal}` : ''} objects` : 'starting…'}
            </span>
          </>
        ) : (
          <span data-testid="run-outcome">{run ? `${run.status}${run.completedAt ? ' at ' + new Date(run.completedAt).toLocaleString() : ''}` : '…'}</span>
        )}
      </div>
      <dl class="facts">
        <div>
          <dt>Processed</dt>
          <dd>{run?.stats.objectsProcessed ?? '…'}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{run?.stats.objectsCreated ?? '…'}</dd>
        </div>
        <div>
          <dt>Updated</dt>
          <dd>{run?.stats.objectsUpdated ?? '…'}</dd>
        </div>
        <div>
          <dt>Deleted</dt>
          <dd>{run?.stats.objectsDeleted ?? '…'}</dd>
        </div>
        <div>
          <dt>Errors</dt>
          <dd>{run?.stats.errors ?? '…'}</dd>
        </div>
        <div>
          <dt>Started by</dt>
          <dd>{run ? `${run.trigger?.type ?? ''} ${run.trigger?.actorUpn ?? ''}` : '…'}</dd>
        </div>
        {run?.approvedBy && (
          <div>
            <dt>Approved by</dt>
            <dd>{run.approvedBy}</dd>
          </div>
        )}
      </dl>
      {run?.error && (
        <div class="error" role="alert">
          {run.error}
        </div>
      )}
      {run?.status === 'AwaitingApproval' && run.approval && (
        <div class="panel">
          <h2>Awaiting approval</h2>
          <ul>
            {run.approval.reasons.map((r: any) => (
              <li key={r.operation}>
                {r.operation}: {r.count} (limit {r.limit})
              </li>
            ))}
          </ul>
          {planned.data && <p data-testid="approval-changes">It applies {planned.data.totalCount} planned changes (listed below).</p>}
          <p>
            Requested by {run.approval.requestedBy}; expires <When value={run.approval.expiresOn} />.
          </p>
          {run.approval.requester && <p>Four-eyes rule: {run.approval.requester} asked for it and cannot approve it.</p>}
        </div>
      )}
      <div class="actions">
        <Action
          label="Cancel run"
          kind="danger"
          allowed={can(session, 'Operator') && live}
          run={async () => (await api('POST', `runs/${id}/cancel`), reload())}
          confirm="Cancel this run? What was applied stays applied."
        />
        <Action
          label="Apply plan"
          kind="primary"
          allowed={can(session, 'Operator') && !!run?.dryRun && run?.status === 'Completed' && !!run?.plan}
          run={async () => {
            const next: any = await api('POST', `runs/${id}/apply`);
            navigate(href(['runs', next.runId]));
          }}
        />
        <Action
          label="Approve"
          kind="primary"
          allowed={can(session, 'Admin') && awaiting}
          run={async () => (await api('POST', `runs/${id}/approve`), reload())}
          confirm={awaiting ? approveQuestion(run, planned.data?.totalCount) : undefined}
        />
        <Action
          label="Reject"
          kind="danger"
          allowed={can(session, 'Admin') && run?.status === 'AwaitingApproval'}
          run={async () => (await api('POST', `runs/${id}/reject`), reload())}
          confirm="Reject this run? It applies nothing and ends as Rejected."
        />
      </div>
      {run?.errors?.length > 0 && (
        <>
          <h2>Object errors</h2>
          <ul class="errors">
            {run.errors.map((e: any, i: number) => (
              <li key={i}>
                {e.object ? `${e.object}: ` : ''}
                {e.message}
              </li>
            ))}
          </ul>
        </>
      )}
      <Changes id={id} route={route} live={live} status={run?.status} />
    </section>
  );
}

/** The approval's confirmation: what went over which limit, and how many changes the run then applies. */
function approveQuestion(run: any, changes: number | undefined): string {
  const reasons = (run.approval?.reasons ?? []).map((r: any) => `${r.operation}: ${r.count} (limit ${r.limit})`).join('; ');
  const count = changes === undefined ? 'its planned changes' : `${changes} planned change${changes === 1 ? '' : 's'}`;
  return `Approve this run? Over its limits: ${reasons}. It applies ${count}.`;
}

function Changes({ id, route, live, status }: { id: string; route: Route; live: boolean; status: string | undefined }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const { data, error, loading, reload } = useLoad<Page<any>>(
    () => api('GET', `runs/${id}/changes`, { query: { operation: q.get('operation'), outcome: q.get('outcome'), skip, take: 50 } }),
    [id, q.toString(), status],
  );
  useInterval(reload, 3000, live);
  const connectorName = useConnectorNames();
  return (
    <>
      <h2>Changes</h2>
      <div class="filters">
        <Field label="Operation">
          <select value={q.get('operation') ?? ''} onChange={(e) => setQuery({ operation: e.currentTarget.value, skip: undefined }, true)}>
            <option value="">All</option>
            {['Add', 'Update', 'Delete', 'Rename'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </Field>
        <Field label="Outcome">
          <select value={q.get('outcome') ?? ''} onChange={(e) => setQuery({ outcome: e.currentTarget.value, skip: undefined }, true)}>
            <option value="">All</option>
            {['applied', 'planned', 'failed', 'drifted'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </Field>
      </div>
      {error && (error as any).status === 404 ? <p class="muted">This service lists no changes per run.</p> : <ErrorBox error={error} />}
      <Table
        caption="Changes"
        skeletonRows={4}
        columns={[
          { label: 'Operation', cell: (c: any) => c.operation, width: '6em' },
          {
            label: 'Object',
            cell: (c: any) =>
              c.meshObjectId ? <Link to={['mesh', c.meshObjectId]}>{c.anchor ?? c.dn ?? c.meshObjectId}</Link> : (c.anchor ?? c.dn ?? c.csObjectId),
          },
          {
            // A connector item names its connector (an import's plan lists what each target would then get).
            label: 'Target',
            cell: (c: any) => (c.target === 'connector' && c.connectorId ? `connector ${connectorName(c.connectorId)}` : c.target),
            width: '10em',
          },
          {
            label: 'Attributes',
            cell: (c: any) =>
              Object.entries(c.attributes ?? {})
                .map(([k, v]: [string, any]) => `${k}: ${value(v.old)} → ${value(v.new)}`)
                .join('; '),
          },
          { label: 'Outcome', cell: (c: any) => <span class={`status status-${c.outcome}`}>{c.outcome}</span>, width: '6em' },
        ]}
        rows={data?.items ?? (error ? [] : undefined)}
        loading={loading}
        empty="No changes."
        rowKey={(c: any) => `${c.target}:${c.connectorId ?? ''}:${c.csObjectId ?? c.meshObjectId}:${c.operation}`}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </>
  );
}
