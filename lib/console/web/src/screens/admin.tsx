/* eslint-disable @typescript-eslint/no-explicit-any */
import { api, type Page } from '../api';
import { can, type Session } from '../auth';
import { setQuery, type Route } from '../router';
import { Action, ErrorBox, Field, Link, Named, Pager, Status, Table, useLoad, value, When, num } from '../ui';
import { useConnectorNames, useNames } from './runs';

export function RulesScreen({ route }: { route: Route }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const names = useNames();
  const { data, error, loading } = useLoad<Page<any>>(() => api('GET', 'rules', { query: { ruleType: q.get('type'), skip, take: 50 } }), [q.toString()]);
  return (
    <section aria-labelledby="rules-title">
      <h1 id="rules-title">Rules</h1>
      <div class="filters">
        <Field label="Rule type">
          <select value={q.get('type') ?? ''} onChange={(e) => setQuery({ type: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            {['JoinRule', 'ProjectionRule', 'FlowRule', 'MeshComposerRule'].map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorBox error={error} />
      <Table
        caption="Rules"
        columns={[
          { label: 'Name', cell: (r: any) => <Named name={r.ruleName} id={r.ruleId} /> },
          { label: 'Type', cell: (r: any) => r.ruleType },
          {
            label: 'Connector',
            cell: (r: any) => (r.connectorId ? <Named name={names.connector(r.connectorId)} id={r.connectorId} to={['connectors', r.connectorId]} /> : '–'),
          },
          { label: 'Flow', cell: (r: any) => `${r.sourceAttribute ?? ''} → ${r.targetAttribute ?? ''}${r.direction === 'outbound' ? ' (out)' : ''}` },
          { label: 'Priority', cell: (r: any) => r.priority, width: '6em' },
          { label: 'Enabled', cell: (r: any) => (r.isEnabled ? 'yes' : 'no'), width: '6em' },
        ]}
        rows={data?.items}
        loading={loading}
        empty="No rules."
        rowKey={(r: any) => r.ruleId ?? r.id}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </section>
  );
}

export function SchedulesScreen({ route, session }: { route: Route; session: Session }) {
  const id = route.segments[1];
  const { data, error, loading, reload } = useLoad<any>(() => api('GET', 'schedules'), []);
  const items = data?.items ?? data?.schedules;
  return (
    <section aria-labelledby="sch-title">
      <h1 id="sch-title">Schedules</h1>
      <ErrorBox error={error} />
      <Table
        caption="Schedules"
        columns={[
          { label: 'Name', cell: (s: any) => <Link to={['schedules', s.scheduleId]}>{s.name}</Link> },
          { label: 'Cron', cell: (s: any) => <code>{s.cron}</code> },
          { label: 'Time zone', cell: (s: any) => s.timeZone },
          { label: 'Enabled', cell: (s: any) => (s.isEnabled ? 'yes' : 'no') },
          { label: 'Next', cell: (s: any) => <When value={s.nextRunOn} /> },
          { label: 'Last', cell: (s: any) => <Status value={s.lastRun?.status} /> },
          {
            label: 'Actions',
            cell: (s: any) => (
              <Action label="Run now" allowed={can(session, 'Operator')} run={async () => (await api('POST', `schedules/${s.scheduleId}/run`), reload())} />
            ),
          },
        ]}
        rows={items}
        loading={loading}
        empty="No schedules."
        rowKey={(s: any) => s.scheduleId}
      />
      {id && <ScheduleRuns id={id} route={route} />}
    </section>
  );
}

function ScheduleRuns({ id, route }: { id: string; route: Route }) {
  const skip = num(route.query, 'skip', 0);
  const connectorName = useConnectorNames();
  const { data, error, loading } = useLoad<Page<any>>(() => api('GET', `schedules/${id}/runs`, { query: { skip, take: 50 } }), [id, skip]);
  return (
    <>
      <h2>Runs of the schedule</h2>
      <ErrorBox error={error} />
      <Table
        caption="Schedule runs"
        columns={[
          { label: 'Started', cell: (r: any) => <When value={r.startedOn} /> },
          { label: 'Trigger', cell: (r: any) => r.trigger },
          { label: 'Status', cell: (r: any) => <Status value={r.status} /> },
          {
            label: 'Steps',
            cell: (r: any) =>
              (r.steps ?? []).map((s: any, i: number) => (
                // One line per step, each run as its connector's name and status: "Export: LDAP Completed, AD Failed".
                <div key={i}>
                  {s.runType}:{' '}
                  {(s.runs ?? []).map((x: any, j: number) => (
                    <span key={x.runId ?? x.connectorId}>
                      {j > 0 && ', '}
                      {x.runId ? (
                        <Link to={['runs', x.runId]}>
                          {connectorName(x.connectorId)} {x.status}
                        </Link>
                      ) : (
                        `${connectorName(x.connectorId)} ${x.status}`
                      )}
                    </span>
                  ))}
                </div>
              )),
          },
        ]}
        rows={data?.items}
        loading={loading}
        empty="No runs yet."
        rowKey={(r: any) => r.scheduleRunId}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </>
  );
}

export function ConfigScreen({ route, session }: { route: Route; session: Session }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const names = useNames();
  const { data, error, loading } = useLoad<Page<any>>(
    () => api('GET', 'config/history', { query: { targetType: q.get('type'), skip, take: 50 } }),
    [q.toString()],
  );
  return (
    <section aria-labelledby="cfg-title">
      <h1 id="cfg-title">Configuration history</h1>
      <div class="filters">
        <Field label="Target type">
          <select value={q.get('type') ?? ''} onChange={(e) => setQuery({ type: e.currentTarget.value, skip: undefined })}>
            <option value="">All</option>
            {['connector', 'rule', 'schedule'].map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorBox error={error} />
      <Table
        caption="Configuration versions"
        columns={[
          { label: 'When', cell: (v: any) => <When value={v.timestamp} /> },
          { label: 'Who', cell: (v: any) => v.actorUpn ?? '–' },
          {
            label: 'Target',
            cell: (v: any) => {
              // The name the version gave it (a rule's ruleName), else its name now; the id as the tooltip.
              const doc = v.after ?? v.before;
              const kind = v.targetType as 'connector' | 'rule' | 'schedule';
              const name = doc?.name || doc?.ruleName || names[kind]?.(v.targetId);
              return (
                <>
                  {v.targetType} <Named name={name} id={v.targetId} />
                </>
              );
            },
          },
          { label: 'Action', cell: (v: any) => v.action },
          {
            label: 'Restore',
            cell: (v: any) => (
              <Action
                label="Restore"
                allowed={can(session, 'Admin')}
                confirm="Put the target back as this version left it?"
                run={() => api('POST', `config/history/${v.versionId}/restore`)}
              />
            ),
          },
        ]}
        rows={data?.items}
        loading={loading}
        empty="No versions."
        rowKey={(v: any) => v.versionId}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </section>
  );
}

export function AuditScreen({ route, session }: { route: Route; session: Session }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const names = useNames();
  const { data, error, loading } = useLoad<Page<any>>(
    () =>
      can(session, 'Admin')
        ? api('GET', 'audit', { query: { actor: q.get('actor'), targetType: q.get('type'), skip, take: 50 } })
        : Promise.resolve({ items: [], totalCount: 0 }),
    [q.toString()],
  );
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      {!can(session, 'Admin') && <p class="muted">Reading the audit needs the Admin role.</p>}
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          setQuery({ actor: String(f.get('actor') ?? ''), type: String(f.get('type') ?? ''), skip: undefined });
        }}
      >
        <Field label="Actor (UPN)">
          <input name="actor" defaultValue={q.get('actor') ?? ''} />
        </Field>
        <Field label="Target type">
          <input name="type" defaultValue={q.get('type') ?? ''} />
        </Field>
        <button type="submit" class="primary">
          Apply
        </button>
      </form>
      <ErrorBox error={error} />
      <Table
        caption="Audit records"
        columns={[
          { label: 'When', cell: (a: any) => <When value={a.timestamp} /> },
          { label: 'Actor', cell: (a: any) => a.actorUpn ?? a.actorSid ?? '–' },
          { label: 'Action', cell: (a: any) => a.action },
          {
            label: 'Target',
            cell: (a: any) => {
              const named = names[a.targetType as 'connector' | 'rule' | 'schedule'];
              const name = named?.(a.targetId);
              return name ? (
                <>
                  {a.targetType} <Named name={name} id={a.targetId} />
                </>
              ) : (
                `${a.targetType} ${value(a.targetId).slice(0, 8)}`
              );
            },
          },
          { label: 'Outcome', cell: (a: any) => a.outcome },
        ]}
        rows={data?.items}
        loading={loading}
        empty="No records."
        rowKey={(a: any) => a.auditId}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </section>
  );
}
