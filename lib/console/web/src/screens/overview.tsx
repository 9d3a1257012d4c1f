/* eslint-disable @typescript-eslint/no-explicit-any */
import { api, type Page } from '../api';
import type { Session } from '../auth';
import { ErrorBox, Link, Status, Table, useLoad, When } from '../ui';
import { LateLeavers } from './leavers';
import { runColumns, useConnectorNames } from './runs';

export function Overview(_: { session: Session }) {
  const names = useConnectorNames();
  const instances = useLoad<Page<any>>(() => api('GET', 'instances'), []);
  const runs = useLoad<Page<any>>(() => api('GET', 'runs', { query: { take: 200 } }), []);
  const awaiting = useLoad<Page<any>>(() => api('GET', 'runs', { query: { status: 'AwaitingApproval', take: 50 } }), []);
  const firstSeen = new Map<string, any>();
  for (const r of runs.data?.items ?? []) if (!firstSeen.has(r.connectorId)) firstSeen.set(r.connectorId, r);
  // Connector-space errors (exports a target refused), per connector: each links to its error list.
  const spaceErrors = useLoad<any[]>(async () => {
    const { connectors } = await api<any>('GET', 'connectors');
    const counts = await Promise.all(
      connectors.map(async (c: any) => ({
        c,
        n: (await api<Page<any>>('GET', `connectors/${c.id}/space`, { query: { state: 'error', take: 1 } })).totalCount,
      })),
    );
    return counts.filter((x) => x.n > 0);
  }, []);
  const failing = runs.data?.items.filter((r: any) => r.status === 'Failed' || r.status === 'CompletedWithErrors').slice(0, 10);
  return (
    <section aria-labelledby="ov-title">
      <h1 id="ov-title">Overview</h1>
      <LateLeavers />
      <div class="grid">
        <div class="card">
          <h2>Engine instances</h2>
          <ErrorBox error={instances.error} />
          <Table
            caption="Engine instances"
            skeletonRows={2}
            columns={[
              { label: 'Name', cell: (i: any) => i.name },
              { label: 'Status', cell: (i: any) => <Status value={i.status} /> },
              { label: 'Heartbeat', cell: (i: any) => <When value={i.lastHeartbeat} /> },
              { label: 'Connectors', cell: (i: any) => i.connectorIds?.length ?? 0 },
            ]}
            rows={instances.data?.items}
            loading={instances.loading}
            empty="No instance."
            rowKey={(i: any) => i.id}
          />
        </div>
        <div class="card">
          <h2>Awaiting approval</h2>
          {/* A service without the approval flow refuses the status (400): nothing can await approval there. */}
          {awaiting.error && (awaiting.error as { status?: number }).status === 400 ? (
            <p class="muted">This service has no approval flow.</p>
          ) : (
            <ErrorBox error={awaiting.error} />
          )}
          <Table
            caption="Runs awaiting approval"
            skeletonRows={2}
            columns={runColumns(names)}
            rows={awaiting.data?.items ?? (awaiting.error ? [] : undefined)}
            loading={awaiting.loading}
            empty="Nothing awaits approval."
            rowKey={(r: any) => r.runId}
          />
        </div>
      </div>
      <h2>Last run per connector</h2>
      <ErrorBox error={runs.error} />
      <Table
        caption="Last run per connector"
        skeletonRows={4}
        columns={runColumns(names)}
        rows={runs.data && [...firstSeen.values()]}
        loading={runs.loading}
        empty="No run yet."
        rowKey={(r: any) => r.runId}
      />
      <h2>Recent errors</h2>
      <Table
        caption="Recent failed runs"
        skeletonRows={2}
        columns={[...runColumns(names), { label: 'Error', cell: (r: any) => r.error ?? `${r.stats?.errors ?? 0} object errors` }]}
        rows={failing}
        loading={runs.loading}
        empty="No failed runs among the last 200."
        rowKey={(r: any) => r.runId}
      />
      <h2>Objects in error</h2>
      <ErrorBox error={spaceErrors.error} />
      <Table
        caption="Connector-space objects in error"
        skeletonRows={1}
        columns={[
          {
            label: 'Connector',
            cell: (x: any) => (
              <Link to={['connectors', x.c.id]} query={{ state: 'error' }}>
                {x.c.name}
              </Link>
            ),
          },
          { label: 'Objects in error', cell: (x: any) => x.n },
        ]}
        rows={spaceErrors.data}
        loading={spaceErrors.loading}
        empty="No connector-space object is in error."
        rowKey={(x: any) => x.c.id}
      />
      <p>
        <Link to={['runs']}>All runs</Link>
      </p>
    </section>
  );
}
