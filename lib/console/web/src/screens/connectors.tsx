/* eslint-disable @typescript-eslint/no-explicit-any */
import { useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { can, type Session } from '../auth';
import { href, navigate, setQuery, type Route } from '../router';
import { Action, ErrorBox, Field, Link, Named, Pager, Status, Table, useLoad, value, When, num } from '../ui';
import { Orphans } from './orphans';
import { useNames } from './runs';

export function ConnectorsScreen({ route, session }: { route: Route; session: Session }) {
  if (route.segments[1] && route.segments[2] === 'orphans') return <Orphans key={route.segments[1]} id={route.segments[1]} route={route} session={session} />;
  return route.segments[1] ? <Space key={route.segments[1]} id={route.segments[1]} route={route} session={session} /> : <ConnectorList session={session} />;
}

function StartRun({ connector, session }: { connector: any; session: Session }) {
  const [runType, setRunType] = useState('DeltaImport');
  const [dryRun, setDryRun] = useState(false);
  if (!can(session, 'Operator')) return null;
  return (
    <span class="inline-form">
      <select aria-label={`Run type for ${connector.name}`} value={runType} onChange={(e) => setRunType(e.currentTarget.value)}>
        {['DeltaImport', 'FullImport', 'FullSync', 'Export', 'OrphanSweep'].map((t) => (
          <option key={t}>{t}</option>
        ))}
      </select>
      <label class="check">
        <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.currentTarget.checked)} /> dry run
      </label>
      <Action
        label={`Start`}
        kind="primary"
        allowed
        run={async () => {
          const exporting = runType === 'Export' || runType === 'OrphanSweep';
          const body: Record<string, unknown> = runType === 'Export' ? {} : { runType };
          if (dryRun) body.dryRun = true;
          const run: any = await api('POST', `connectors/${connector.id}/${exporting ? 'export' : 'import'}`, { body });
          navigate(href(['runs', run.runId]));
        }}
      />
    </span>
  );
}

function ConnectorList({ session }: { session: Session }) {
  const { data, error, loading } = useLoad<any>(() => api('GET', 'connectors'), []);
  return (
    <section aria-labelledby="con-title">
      <h1 id="con-title">Connectors</h1>
      <ErrorBox error={error} />
      <Table
        caption="Connectors"
        columns={[
          { label: 'Name', cell: (c: any) => <Link to={['connectors', c.id]}>{c.name}</Link> },
          { label: 'Type', cell: (c: any) => c.type },
          { label: 'Status', cell: (c: any) => <Status value={c.status} /> },
          { label: 'Updated', cell: (c: any) => <When value={c.updatedOn} /> },
          { label: 'Run', cell: (c: any) => <StartRun connector={c} session={session} /> },
        ]}
        rows={data?.connectors}
        loading={loading}
        empty="No connectors."
        rowKey={(c: any) => c.id}
      />
    </section>
  );
}

const STATES: [string, string][] = [
  ['joined', 'joined'],
  ['disconnector', 'disconnector'],
  ['pendingExport', 'pendingExport (next export)'],
  ['awaitingConfirmation', 'awaitingConfirmation'],
  ['error', 'error'],
  ['scheduledDeprovision', 'scheduledDeprovision (grace)'],
];

function Space({ id, route, session }: { id: string; route: Route; session: Session }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const cs = q.get('cs');
  const connector = useLoad<any>(() => api('GET', `connectors/${id}`), [id]);
  const { data, error, loading } = useLoad<Page<any>>(
    () => api('GET', `connectors/${id}/space`, { query: { state: q.get('state'), objectType: q.get('type'), search: q.get('search'), skip, take: 50 } }),
    [id, q.get('state'), q.get('type'), q.get('search'), skip],
  );
  return (
    <section aria-labelledby="space-title">
      <p class="crumbs">
        <Link to={['connectors']}>Connectors</Link> / {connector.data?.name ?? '…'}
      </p>
      <h1 id="space-title">
        {connector.data?.name ?? '…'} <small>connector space</small>
      </h1>
      {connector.data && (
        <p>
          <StartRun connector={connector.data} session={session} />{' '}
          <Link to={['runs']} query={{ connector: id }}>
            Runs of this connector
          </Link>{' '}
          <Link to={['connectors', id, 'orphans']}>Orphans</Link>
        </p>
      )}
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          setQuery({ search: String(f.get('search') ?? ''), type: String(f.get('type') ?? ''), skip: undefined });
        }}
      >
        <Field label="State">
          <select value={q.get('state') ?? ''} onChange={(e) => setQuery({ state: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            {STATES.map(([s, label]) => (
              <option key={s} value={s}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Object type">
          <input name="type" defaultValue={q.get('type') ?? ''} />
        </Field>
        <Field label="Anchor or DN contains">
          <input name="search" defaultValue={q.get('search') ?? ''} />
        </Field>
        <button type="submit" class="primary">
          Apply
        </button>
      </form>
      <ErrorBox error={error} />
      <div class={cs ? 'split' : ''}>
        <div>
          <Table
            caption="Connector space objects"
            columns={[
              {
                label: 'Anchor',
                cell: (o: any) => (
                  <Link to={['connectors', id]} query={{ ...Object.fromEntries(q.entries()), cs: o.csObjectId }}>
                    {o.anchor ?? '(staged add)'}
                  </Link>
                ),
              },
              { label: 'Type', cell: (o: any) => o.objectType },
              { label: 'Mesh', cell: (o: any) => (o.meshObjectId ? <Link to={['mesh', o.meshObjectId]}>joined</Link> : 'disconnector') },
              {
                label: 'Pending',
                cell: (o: any) =>
                  o.pendingExport ? `${o.pendingExport.operation} (${o.pendingExport.attributeCount})` : o.awaitingConfirmation ? 'awaiting confirmation' : '–',
              },
              // Only a scheduled deprovisioning has a due time.
              ...(q.get('state') === 'scheduledDeprovision' ? [{ label: 'Due on', cell: (o: any) => <When value={o.dueOn} /> }] : []),
              {
                label: 'Error',
                cell: (o: any) =>
                  o.error ? (
                    <span class="status status-failed" title={o.error.message}>
                      {o.error.attempts}×
                    </span>
                  ) : (
                    '–'
                  ),
              },
            ]}
            rows={data?.items}
            loading={loading}
            empty="No objects."
            rowKey={(o: any) => o.csObjectId}
          />
          {(data as any)?.partial && (
            <p class="note" role="status">
              Partial: the next export has more objects to look at than one listing computes (20,000); this list is incomplete.
            </p>
          )}
          <Pager skip={skip} take={50} total={data?.totalCount} />
        </div>
        {cs && <CsObject key={cs} connectorId={id} csId={cs} session={session} />}
      </div>
    </section>
  );
}

function CsObject({ connectorId, csId, session }: { connectorId: string; csId: string; session: Session }) {
  const names = useNames();
  const { data, error, reload } = useLoad<any>(() => api('GET', `connectors/${connectorId}/space/${csId}`), [connectorId, csId]);
  const [outcome, setOutcome] = useState<any>();
  const base = `connectors/${connectorId}/space/${csId}`;
  return (
    <aside class="panel" aria-labelledby="cs-title">
      <h2 id="cs-title">{data?.anchor ?? data?.dn ?? csId}</h2>
      <ErrorBox error={error} />
      {data?.error && (
        <div class="error" role="alert">
          {data.error.message} ({data.error.attempts} attempts)
        </div>
      )}
      <div class="actions">
        <Action
          label="Preview"
          allowed={can(session, 'Operator')}
          run={async () => setOutcome({ kind: 'Preview', ...(await api<any>('POST', `${base}/preview`)) })}
        />
        <Action
          label="Sync now"
          kind="primary"
          allowed={can(session, 'Operator')}
          run={async () => {
            setOutcome({ kind: 'Sync', ...(await api<any>('POST', `${base}/sync`)) });
            reload();
          }}
        />
        <Action label="Retry export" allowed={can(session, 'Operator') && !!data?.error} run={async () => (await api('POST', `${base}/retry`), reload())} />
        <a href={href(['connectors', connectorId])}>Close</a>
      </div>
      {outcome && (
        <div class="outcome" aria-live="polite">
          <h3>
            {outcome.kind}: join {outcome.join?.outcome}
          </h3>
          <ul>
            {(outcome.meshChanges ?? []).map((c: any) => (
              <li key={c.attribute}>
                {c.attribute}: {value(c.old)} → {value(c.new)}
              </li>
            ))}
            {(outcome.exports ?? []).map((x: any, i: number) => (
              <li key={i}>
                export {x.operation} to <Named name={names.connector(x.connectorId)} id={x.connectorId} />: {Object.keys(x.attributes ?? {}).join(', ')}
              </li>
            ))}
            {!outcome.meshChanges?.length && !outcome.exports?.length && <li>Nothing to change.</li>}
          </ul>
        </div>
      )}
      <h3>Attributes</h3>
      <dl class="attrs">
        {Object.entries(data?.attributes ?? {}).map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{value(v)}</dd>
          </div>
        ))}
      </dl>
      {data?.pendingExport && (
        <>
          <h3>Pending export: {data.pendingExport.operation}</h3>
          <dl class="attrs">
            {Object.entries(data.pendingExport.attributes ?? {}).map(([k, v]: [string, any]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>
                  {value(v.old)} → {value(v.new)}
                </dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </aside>
  );
}
