/* eslint-disable @typescript-eslint/no-explicit-any */
import { useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { can, type Session } from '../auth';
import { href, navigate, setQuery, type Route } from '../router';
import { Action, ErrorBox, Field, Link, Pager, Table, useLoad, When, num } from '../ui';

const REASONS: [string, string][] = [
  ['disconnector', 'disconnector (joined to nothing)'],
  ['tombstone', 'tombstone (grace over)'],
  ['overdue', 'overdue deprovisioning'],
  ['gone', 'gone (mesh object purged)'],
];

/**
 * A target's orphans (GET /connectors/{id}/orphans): accounts joined to no active identity, the excluded ones
 * with why; an Admin keeps an account or removes the mark, an Operator starts a sweep (a run like any other).
 */
export function Orphans({ id, route, session }: { id: string; route: Route; session: Session }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const [dryRun, setDryRun] = useState(false);
  const connector = useLoad<any>(() => api('GET', `connectors/${id}`), [id]);
  const { data, error, loading, reload } = useLoad<Page<any> & { sweepable: number }>(
    () => api('GET', `connectors/${id}/orphans`, { query: { reason: q.get('reason'), excluded: q.get('excluded'), skip, take: 50 } }),
    [id, q.get('reason'), q.get('excluded'), skip],
  );
  return (
    <section aria-labelledby="orphans-title">
      <p class="crumbs">
        <Link to={['connectors']}>Connectors</Link> / <Link to={['connectors', id]}>{connector.data?.name ?? '…'}</Link> / orphans
      </p>
      <h1 id="orphans-title">
        {connector.data?.name ?? '…'} <small>orphans</small>
      </h1>
      <p class="muted">Accounts in this target joined to no active identity. Excluded ones are listed and never swept.</p>
      {can(session, 'Operator') && data && (
        <p class="inline-form">
          <span role="status">{data.sweepable} to sweep.</span>{' '}
          <label class="check">
            <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.currentTarget.checked)} /> dry run
          </label>
          <Action
            label="Sweep orphans"
            kind="danger"
            allowed
            confirm={
              dryRun
                ? undefined
                : `Disable (or delete, as the target's setting says) the ${data.sweepable} orphans of this target? Thresholds and approval apply.`
            }
            run={async () => {
              const run: any = await api('POST', `connectors/${id}/export`, { body: { runType: 'OrphanSweep', ...(dryRun ? { dryRun: true } : {}) } });
              navigate(href(['runs', run.runId]));
            }}
          />
        </p>
      )}
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <Field label="Reason">
          <select value={q.get('reason') ?? ''} onChange={(e) => setQuery({ reason: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            {REASONS.map(([r, label]) => (
              <option key={r} value={r}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Excluded">
          <select value={q.get('excluded') ?? ''} onChange={(e) => setQuery({ excluded: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            <option value="false">To sweep</option>
            <option value="true">Excluded</option>
          </select>
        </Field>
      </form>
      <ErrorBox error={error} />
      <Table
        caption="Orphans"
        columns={[
          {
            label: 'Name',
            cell: (o: any) => (
              <Link to={['connectors', id]} query={{ cs: o.csObjectId }}>
                {o.displayName}
              </Link>
            ),
          },
          { label: 'Reason', cell: (o: any) => o.reason },
          { label: 'State', cell: (o: any) => o.targetState },
          { label: 'Since', cell: (o: any) => <When value={o.since} /> },
          {
            label: 'Excluded',
            cell: (o: any) => (o.excluded ? `${o.excluded.reason} (${o.excluded.by})${o.excluded.note ? `: ${o.excluded.note}` : ''}` : '–'),
          },
          { label: 'DN or anchor', cell: (o: any) => o.dn ?? o.anchor },
          {
            label: 'Keep',
            cell: (o: any) =>
              o.excluded?.reason === 'keep' ? (
                <Action
                  label="Unkeep"
                  allowed={can(session, 'Admin')}
                  run={async () => (await api('DELETE', `connectors/${id}/orphans/${o.csObjectId}/keep`), reload())}
                />
              ) : o.excluded ? (
                '–'
              ) : (
                <Action
                  label="Keep"
                  allowed={can(session, 'Admin')}
                  run={async () => (await api('PUT', `connectors/${id}/orphans/${o.csObjectId}/keep`, { body: {} }), reload())}
                />
              ),
          },
        ]}
        rows={data?.items}
        loading={loading}
        empty="No orphans."
        rowKey={(o: any) => o.csObjectId}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </section>
  );
}
