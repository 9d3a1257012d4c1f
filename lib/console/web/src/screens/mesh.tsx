/* eslint-disable @typescript-eslint/no-explicit-any */
import { useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { can, type Session } from '../auth';
import { href, navigate, setQuery, type Route } from '../router';
import { Action, ErrorBox, Field, Link, Named, Pager, Table, useLoad, value, When, num } from '../ui';
import { useNames } from './runs';

export const OPERATORS = ['equals', 'contains', 'startswith', 'endswith', 'ispresent', 'isnotpresent', 'istrue', 'isfalse'];
const NEEDS_VALUE = new Set(['equals', 'contains', 'startswith', 'endswith']);

interface Criterion {
  attributeName: string;
  operator: string;
  value?: string;
}

/** `where` in the URL: one `attribute~operator~value` per parameter, repeated (AND). */
function criteriaOf(q: URLSearchParams): Criterion[] {
  return q.getAll('where').map((w) => {
    const [attributeName, operator, ...rest] = w.split('~');
    return NEEDS_VALUE.has(operator) ? { attributeName, operator, value: rest.join('~') } : { attributeName, operator };
  });
}

function withCriteria(route: Route, criteria: Criterion[], extra: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams(route.query);
  q.delete('where');
  q.delete('skip');
  for (const c of criteria) q.append('where', [c.attributeName, c.operator, c.value ?? ''].join('~'));
  for (const [k, v] of Object.entries(extra)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const qs = q.toString();
  return href(route.segments) + (qs ? `?${qs}` : '');
}

export function MeshScreen({ route, session }: { route: Route; session: Session }) {
  return route.segments[1] ? (
    <MeshDetail key={route.segments[1]} route={route} id={route.segments[1]} session={session} />
  ) : (
    <MeshList route={route} session={session} />
  );
}

function MeshList({ route, session }: { route: Route; session: Session }) {
  const q = route.query;
  const skip = num(q, 'skip', 0);
  const take = 50;
  const type = q.get('type') ?? '';
  const search = q.get('search') ?? '';
  const deleted = q.get('state') === 'deleted';
  const criteria = criteriaOf(q);
  const cols = (q.get('cols') ?? '').split(',').filter(Boolean);
  const { data, error, loading, reload } = useLoad<Page<any>>(
    () =>
      criteria.length && !deleted
        ? api('POST', 'mesh/objects/search', { body: { objectType: type || undefined, anchorSearch: search || undefined, criteria, skip, take } })
        : api('GET', 'mesh/objects', { query: { objectType: type, search, skip, take, state: deleted ? 'deleted' : undefined } }),
    [q.toString()],
  );
  const attrNames = [...new Set((data?.items ?? []).flatMap((o) => Object.keys(o.attributeValues ?? {})))].sort();
  const [draft, setDraft] = useState<Criterion>({ attributeName: '', operator: 'equals', value: '' });
  const columns = [
    { label: 'Anchor', cell: (o: any) => <Link to={['mesh', o.meshObjectId]}>{o.anchorValue}</Link> },
    { label: 'Type', cell: (o: any) => o.objectType, width: '8em' },
    ...cols.map((c) => ({ label: c, cell: (o: any) => value(o.attributeValues?.[c]) })),
    ...(deleted
      ? [
          { label: 'Deleted', cell: (o: any) => <When value={o.deletedOn} /> },
          // A tombstone is listed until it is purged: purgeOn is when the purge will remove it (restore before then).
          { label: 'Purge due', cell: (o: any) => <When value={o.purgeOn} /> },
          {
            label: 'Actions',
            cell: (o: any) => (
              <Action
                label="Restore"
                allowed={can(session, 'Admin')}
                run={async () => (await api('POST', `mesh/objects/${o.meshObjectId}/restore`), reload())}
              />
            ),
          },
        ]
      : cols.length
        ? []
        : [{ label: 'Updated', cell: (o: any) => <When value={o.updatedOn} />, width: '14em' }]),
  ];
  return (
    <section aria-labelledby="mesh-title">
      <h1 id="mesh-title">Mesh {deleted ? '– deleted objects' : ''}</h1>
      <div class="tabs" role="tablist" aria-label="Mesh objects">
        <Link to={['mesh']} role="tab" aria-selected={!deleted} class={!deleted ? 'on' : ''}>
          Active
        </Link>
        <Link to={['mesh']} query={{ state: 'deleted' }} role="tab" aria-selected={deleted} class={deleted ? 'on' : ''}>
          Deleted (tombstones)
        </Link>
      </div>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          setQuery({ type: String(f.get('type') ?? ''), search: String(f.get('search') ?? ''), skip: undefined });
        }}
      >
        <Field label="Object type">
          <input name="type" defaultValue={type} placeholder="User" />
        </Field>
        <Field label="Anchor contains">
          <input name="search" defaultValue={search} />
        </Field>
        <button type="submit" class="primary">
          Apply
        </button>
      </form>
      {!deleted && (
        <form
          class="filters criteria"
          aria-label="Attribute criteria"
          onSubmit={(e) => {
            e.preventDefault();
            if (!draft.attributeName) return;
            navigate(
              withCriteria(route, [...criteria, NEEDS_VALUE.has(draft.operator) ? draft : { attributeName: draft.attributeName, operator: draft.operator }]),
            );
          }}
        >
          <Field label="Attribute">
            <input list="mesh-attrs" value={draft.attributeName} onInput={(e) => setDraft({ ...draft, attributeName: e.currentTarget.value })} />
          </Field>
          <datalist id="mesh-attrs">
            {attrNames.map((a) => (
              <option key={a} value={a} />
            ))}
          </datalist>
          <Field label="Operator">
            <select value={draft.operator} onChange={(e) => setDraft({ ...draft, operator: e.currentTarget.value })}>
              {OPERATORS.map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
          </Field>
          <Field label="Value">
            <input value={draft.value} disabled={!NEEDS_VALUE.has(draft.operator)} onInput={(e) => setDraft({ ...draft, value: e.currentTarget.value })} />
          </Field>
          <button type="submit">Add criterion</button>
        </form>
      )}
      {criteria.length > 0 && (
        <ul class="chips" aria-label="Criteria (all must hold)">
          {criteria.map((c, i) => (
            <li key={i}>
              {c.attributeName} {c.operator} {c.value ?? ''}
              <button
                type="button"
                aria-label={`Remove criterion ${c.attributeName} ${c.operator}`}
                onClick={() =>
                  navigate(
                    withCriteria(
                      route,
                      criteria.filter((_, j) => j !== i),
                    ),
                  )
                }
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <details class="columns">
        <summary>Columns ({cols.length ? cols.join(', ') : 'none picked'})</summary>
        <fieldset>
          <legend class="sr-only">Attributes shown as columns</legend>
          {[...new Set([...attrNames, ...cols])].map((a) => (
            <label key={a} class="check">
              <input
                type="checkbox"
                checked={cols.includes(a)}
                onChange={(e) => setQuery({ cols: (e.currentTarget.checked ? [...cols, a] : cols.filter((c) => c !== a)).join(',') }, true)}
              />{' '}
              {a}
            </label>
          ))}
        </fieldset>
      </details>
      <ErrorBox error={error} />
      <Table caption="Mesh objects" columns={columns} rows={data?.items} loading={loading} empty="No mesh object matches." rowKey={(o) => o.meshObjectId} />
      <Pager skip={skip} take={take} total={data?.totalCount} />
    </section>
  );
}

function MeshDetail({ route, id, session }: { route: Route; id: string; session: Session }) {
  const tab = route.query.get('tab') ?? 'attributes';
  const attr = route.query.get('attr');
  const { data: obj, error, reload } = useLoad<any>(() => api('GET', `mesh/objects/${id}`), [id]);
  const tabs = [
    ['attributes', 'Attributes'],
    ['history', 'History'],
    ['connectors', 'Connectors'],
    ['relationships', 'Relationships'],
  ];
  const name = obj?.displayName ?? obj?.anchorValue;
  return (
    <section aria-labelledby="obj-title">
      <p class="crumbs">
        <Link to={['mesh']}>Mesh</Link> / {name ?? '…'}
      </p>
      <h1 id="obj-title">
        {obj ? name : '…'}{' '}
        <small>
          {obj && name !== obj.anchorValue ? `${obj.anchorValue} · ` : ''}
          {obj?.objectType}
        </small>{' '}
        {obj?.state === 'deleted' && <span class="status status-failed">deleted</span>}
      </h1>
      <ErrorBox error={error} />
      {obj?.state === 'deleted' && (
        <p>
          Deleted <When value={obj.deletedOn} />; purge due <When value={obj.purgeOn} /> (restore it before then).{' '}
          <Action
            label="Restore"
            kind="primary"
            allowed={can(session, 'Admin')}
            run={async () => (await api('POST', `mesh/objects/${id}/restore`), reload())}
          />
        </p>
      )}
      <div class="tabs" role="tablist" aria-label="Object views">
        {tabs.map(([k, label]) => (
          <Link
            key={k}
            to={['mesh', id]}
            query={{ tab: k === 'attributes' ? undefined : k }}
            role="tab"
            aria-selected={tab === k}
            class={tab === k ? 'on' : ''}
          >
            {label}
          </Link>
        ))}
      </div>
      {tab === 'attributes' && (
        <div class="split">
          <Table
            caption="Attributes"
            columns={[
              {
                label: 'Attribute',
                cell: (a: any) => (
                  <Link to={['mesh', id]} query={{ attr: a.attributeName }} aria-label={`Explain ${a.attributeName}`}>
                    {a.attributeName}
                  </Link>
                ),
              },
              { label: 'Value', cell: (a: any) => a.attributeValue },
              { label: 'Confidence', cell: (a: any) => a.confidence, width: '7em' },
              { label: 'Updated', cell: (a: any) => <When value={a.updatedOn} /> },
            ]}
            rows={obj?.attributes}
            loading={!obj}
            empty="No attributes."
            rowKey={(a: any) => `${a.attributeName}=${a.attributeValue}`}
          />
          {attr && <Explain key={attr} id={id} attr={attr} />}
        </div>
      )}
      {tab === 'history' && <History id={id} route={route} />}
      {tab === 'connectors' && (
        <Table
          caption="Connector objects"
          columns={[
            { label: 'Connector', cell: (c: any) => <Link to={['connectors', c.connectorId]}>{c.connectorName}</Link> },
            {
              label: 'State',
              cell: (c: any) => (
                <span class={`status status-${c.state === 'joined' ? 'completed' : c.state === 'error' ? 'error' : 'running'}`}>
                  {CS_STATES[c.state] ?? c.state}
                  {c.pendingOperation ? ` (${c.pendingOperation})` : ''}
                </span>
              ),
            },
            {
              label: 'Object',
              cell: (c: any) => (
                <Link to={['connectors', c.connectorId]} query={{ cs: c.csObjectId }} aria-label={`Object in ${c.connectorName}`}>
                  {c.dn ?? c.anchor ?? '(add not made yet)'}
                </Link>
              ),
            },
            { label: 'Anchor', cell: (c: any) => c.anchor ?? '–' },
            { label: 'Error', cell: (c: any) => c.error ?? (c.dueOn ? <When value={c.dueOn} /> : '–') },
          ]}
          rows={obj?.connectorObjects}
          loading={!obj}
          empty="In no connector."
          rowKey={(c: any) => c.connectorId + c.csObjectId}
        />
      )}
      {tab === 'relationships' && (
        <>
          <h3>Outgoing</h3>
          <Table
            caption="Relationships"
            columns={[
              { label: 'Relationship', cell: (r: any) => r.relationshipType },
              { label: 'Target', cell: (r: any) => <Link to={['mesh', r.targetMeshObjectId]}>{r.targetDisplayName ?? r.targetAnchorValue}</Link> },
              { label: 'Anchor', cell: (r: any) => r.targetAnchorValue },
              { label: 'Type', cell: (r: any) => r.targetObjectType },
              {
                label: 'Explain',
                cell: (r: any) => (
                  <Link to={['mesh', id]} query={{ attr: r.relationshipType }} aria-label={`Explain ${r.relationshipType}`}>
                    why
                  </Link>
                ),
              },
            ]}
            rows={obj?.relationships}
            loading={!obj}
            empty="No outgoing relationships."
            rowKey={(r: any) => r.relationshipType + r.targetMeshObjectId}
          />
          <h3>Incoming: the objects that name this one</h3>
          <Table
            caption="Incoming relationships"
            columns={[
              { label: 'Relationship', cell: (r: any) => INCOMING[r.type] ?? `${r.type} of` },
              { label: 'From', cell: (r: any) => <Link to={['mesh', r.fromMeshObjectId]}>{r.fromDisplayName}</Link> },
              { label: 'Anchor', cell: (r: any) => r.fromAnchorValue },
              { label: 'Type', cell: (r: any) => r.fromObjectType },
            ]}
            rows={obj?.incomingRelationships}
            loading={!obj}
            empty="No incoming relationships."
            rowKey={(r: any) => r.type + r.fromMeshObjectId}
          />
        </>
      )}
    </section>
  );
}

/** Connector object states as the Connectors tab shows them. */
const CS_STATES: Record<string, string> = {
  joined: 'joined',
  pendingExport: 'pending export',
  awaitingConfirmation: 'awaiting confirmation',
  error: 'error',
  scheduledDeprovision: 'deprovisioning scheduled',
};

/** How an incoming relationship reads from the related object's side. */
const INCOMING: Record<string, string> = { manager: 'direct report', member: 'member of', uniqueMember: 'member of' };

function Explain({ id, attr }: { id: string; attr: string }) {
  const names = useNames();
  const { data, error } = useLoad<any>(() => api('GET', `mesh/objects/${id}/attributes/${encodeURIComponent(attr)}/explain`), [id, attr]);
  return (
    <aside class="panel" aria-labelledby="explain-title">
      <h2 id="explain-title">
        Why {attr} is{' '}
        {data
          ? data.relationship && !data.candidates.length
            ? data.relationship.targets.map((t: any) => t.displayName).join(', ')
            : `"${value(data.value)}"`
          : '…'}
      </h2>
      <ErrorBox error={error} />
      {data?.relationship && (
        <>
          <h3>Relationship</h3>
          <Table
            caption="Relationship sources"
            skeletonRows={1}
            columns={[
              { label: 'Related object', cell: (x: any) => <Link to={['mesh', x.target.meshObjectId]}>{x.target.displayName}</Link> },
              { label: 'Connector', cell: (x: any) => x.source.connectorName ?? '(mesh)' },
              { label: 'Source attribute', cell: (x: any) => x.source.sourceAttribute ?? '–' },
              { label: 'Value', cell: (x: any) => value(x.source.value) },
              { label: 'Rule', cell: (x: any) => x.source.ruleName ?? (x.source.ruleType ? x.source.ruleId : 'reference attribute') },
            ]}
            rows={data.relationship.targets.flatMap((t: any) => t.sources.map((source: any) => ({ target: t, source })))}
            loading={false}
            empty="Not resolved yet."
            rowKey={(x: any) => `${x.target.meshObjectId}:${x.source.connectorId}:${x.source.ruleId}`}
          />
        </>
      )}
      {data?.composedBy && (
        <p>
          Computed by rule <Named name={names.rule(data.composedBy.ruleId)} id={data.composedBy.ruleId} /> from {data.composedBy.inputs.join(', ')}.
        </p>
      )}
      {!(data?.relationship && !data.candidates.length) && (
        <>
          <h3>Contributions</h3>
          <Table
            caption="Contributions"
            skeletonRows={2}
            columns={[
              { label: 'Connector', cell: (c: any) => c.connectorName ?? c.connectorId },
              { label: 'Source attribute', cell: (c: any) => c.sourceAttribute },
              { label: 'Value', cell: (c: any) => value(c.value) },
              { label: 'Confidence', cell: (c: any) => c.confidence },
              { label: 'Outcome', cell: (c: any) => <span class={`status status-${c.outcome === 'won' ? 'completed' : 'none'}`}>{c.outcome}</span> },
            ]}
            rows={data?.candidates}
            loading={!data}
            empty="No connector contributes (computed value)."
            rowKey={(c: any) => `${c.connectorId}:${c.csObjectId}:${c.sourceAttribute}`}
          />
        </>
      )}
      <h3>Exports</h3>
      <Table
        caption="Exports"
        skeletonRows={1}
        columns={[
          { label: 'Target', cell: (x: any) => x.connectorName ?? x.connectorId },
          { label: 'Attribute', cell: (x: any) => x.targetAttribute },
          { label: 'Value', cell: (x: any) => value(x.value) },
          { label: 'State', cell: (x: any) => x.state },
        ]}
        rows={data?.exports}
        loading={!data}
        empty="Not exported anywhere."
        rowKey={(x: any) => `${x.connectorId}:${x.targetAttribute}`}
      />
    </aside>
  );
}

function History({ id, route }: { id: string; route: Route }) {
  const skip = num(route.query, 'skip', 0);
  const { data, error, loading } = useLoad<Page<any>>(() => api('GET', `mesh/objects/${id}/history`, { query: { skip, take: 50 } }), [id, skip]);
  return (
    <>
      <ErrorBox error={error} />
      <Table
        caption="History"
        columns={[
          { label: 'When', cell: (h: any) => <When value={h.timestamp} /> },
          { label: 'Operation', cell: (h: any) => h.operation },
          { label: 'Run', cell: (h: any) => (h.runId ? <Link to={['runs', h.runId]}>{h.runId.slice(0, 8)}</Link> : '–') },
          { label: 'Changes', cell: (h: any) => (h.changes ?? []).map((c: any) => `${c.attribute}: ${value(c.old)} → ${value(c.new)}`).join('; ') },
        ]}
        rows={data?.items}
        loading={loading}
        empty="No history."
        rowKey={(h: any) => `${h.timestamp}:${h.operation}:${h.runId}`}
      />
      <Pager skip={skip} take={50} total={data?.totalCount} />
    </>
  );
}
