/* eslint-disable @typescript-eslint/no-explicit-any */
import { useEffect, useState } from 'preact/hooks';
import { api, type Page } from '../api';
import { can, type Session } from '../auth';
import { href, navigate, setQuery, type Route } from '../router';
import { ErrorBox, Link, num, Pager, Table, useLoad, When } from '../ui';
import { useConnectorNames } from './runs';

// Correlation cases: the open queue, and one case with its candidates side by side, decided with the keyboard
// (j: join the best, 1-9: join that candidate, p: project, i: ignore, n: next). docs/correlation.md, docs/console.md.

const REASONS: Record<string, string> = {
  noKey: 'No key',
  severalCandidates: 'Several candidates',
  belowThreshold: 'Below the threshold',
};

export function CasesScreen({ route, session }: { route: Route; session: Session }) {
  const id = route.segments[1];
  return id ? <CaseView id={id} route={route} session={session} /> : <CaseList route={route} />;
}

function CaseList({ route }: { route: Route }) {
  const names = useConnectorNames();
  const skip = num(route.query, 'skip', 0);
  const take = num(route.query, 'take', 50);
  const reason = route.query.get('reason') ?? '';
  const list = useLoad<Page<any>>(() => api('GET', 'correlation-cases', { query: { state: 'open', reason, skip, take } }), [reason, skip, take]);
  return (
    <section aria-labelledby="cases-title">
      <h1 id="cases-title">Correlation cases</h1>
      <p class="muted">Objects an import could not join for sure. Open one to decide it; the keyboard works through the queue.</p>
      <label>
        Reason{' '}
        <select value={reason} onChange={(e) => setQuery({ reason: (e.target as HTMLSelectElement).value, skip: undefined })}>
          <option value="">Any</option>
          {Object.entries(REASONS).map(([k, v]) => (
            <option key={k} value={k}>
              {v}
            </option>
          ))}
        </select>
      </label>
      <ErrorBox error={list.error} />
      <Table
        caption="Open correlation cases"
        columns={[
          {
            label: 'Object',
            cell: (c: any) => (
              <Link to={['cases', c.caseId]} query={{ reason }}>
                {c.object.displayName}
              </Link>
            ),
          },
          { label: 'Connector', cell: (c: any) => names(c.connectorId) },
          { label: 'Reason', cell: (c: any) => REASONS[c.reason] ?? c.reason },
          { label: 'Candidates', cell: (c: any) => c.candidates.length },
          { label: 'Best', cell: (c: any) => (c.candidates[0] ? `${c.candidates[0].displayName} (${c.candidates[0].score})` : '') },
          { label: 'Opened', cell: (c: any) => <When value={c.openedOn} /> },
        ]}
        rows={list.data?.items}
        loading={list.loading}
        empty="No open case."
        rowKey={(c: any) => c.caseId}
      />
      <Pager skip={skip} take={take} total={list.data?.totalCount} />
    </section>
  );
}

const how = (m: any) => (m.how === 'fuzzy' ? `fuzzy (${m.similarity})` : m.how);

function CaseView({ id, route, session }: { id: string; route: Route; session: Session }) {
  const names = useConnectorNames();
  const one = useLoad<any>(() => api('GET', `correlation-cases/${id}`), [id]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const [done, setDone] = useState<string>();
  const allowed = can(session, 'Operator');
  const reason = route.query.get('reason') ?? '';

  /** The next open case of the queue (the same reason filter), or the list when none is left. */
  const next = async () => {
    const page = await api<Page<any>>('GET', 'correlation-cases', { query: { state: 'open', reason, take: 2 } });
    const after = page.items.find((c: any) => c.caseId !== id);
    navigate(after ? href(['cases', after.caseId], { reason }) : href(['cases'], { reason }));
  };
  const decide = async (body: { decision: string; meshObjectId?: string }) => {
    if (busy || !allowed) return;
    setBusy(true);
    setError(undefined);
    try {
      const res = await api<any>('POST', `correlation-cases/${id}/decide`, { body });
      setDone(`${res.decision}${res.meshObjectId ? ` → ${res.meshObjectId}` : ''}`);
      await next();
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    setDone(undefined);
    setError(undefined);
  }, [id]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || (e.target as HTMLElement)?.closest?.('input,select,textarea')) return;
      const c = one.data;
      if (!c || c.state !== 'open') return;
      const k = e.key.toLowerCase();
      if (k === 'j' && c.candidates[0]) void decide({ decision: 'join', meshObjectId: c.candidates[0].meshObjectId });
      else if (/^[1-9]$/.test(k) && c.candidates[Number(k) - 1]) void decide({ decision: 'join', meshObjectId: c.candidates[Number(k) - 1].meshObjectId });
      else if (k === 'p') void decide({ decision: 'project' });
      else if (k === 'i') void decide({ decision: 'ignore' });
      else if (k === 'n') void next();
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });
  const c = one.data;
  return (
    <section aria-labelledby="case-title">
      <p>
        <Link to={['cases']} query={{ reason }}>
          All open cases
        </Link>
      </p>
      <ErrorBox error={one.error} />
      {c && (
        <>
          <h1 id="case-title">{c.object.displayName}</h1>
          <p>
            <span data-testid="case-state">{c.state}</span>
            {c.decision ? ` (${c.decision})` : ''} · {REASONS[c.reason] ?? c.reason} · {names(c.connectorId)}
          </p>
          <div class="grid cases">
            <div class="card" data-testid="case-object">
              <h2>The object</h2>
              <p>
                <code>{c.object.anchor}</code>
              </p>
              {c.object.dn && <p class="muted">{c.object.dn}</p>}
              <dl>
                {Object.entries(c.object.attributes).map(([k, v]) => (
                  <>
                    <dt key={`t-${k}`}>{k}</dt>
                    <dd key={`d-${k}`}>{v === null ? '' : String(v)}</dd>
                  </>
                ))}
              </dl>
            </div>
            {c.candidates.map((x: any, i: number) => (
              <div class="card" key={x.meshObjectId} data-testid="candidate">
                <h2>
                  {i + 1}. {x.displayName}
                </h2>
                <p>
                  <code>{x.anchor}</code> · score <strong>{x.score}</strong>
                </p>
                <ul>
                  {x.matched.map((m: any) => (
                    <li key={m.ruleId}>
                      {m.ruleName}: {m.sourceAttribute} → {m.targetAttribute}, {how(m)} (+{m.points})
                    </li>
                  ))}
                </ul>
                {allowed && c.state === 'open' && (
                  <button type="button" class="primary" disabled={busy} onClick={() => decide({ decision: 'join', meshObjectId: x.meshObjectId })}>
                    Join ({i + 1})
                  </button>
                )}
              </div>
            ))}
          </div>
          {allowed && c.state === 'open' && (
            <p class="actions">
              <button type="button" disabled={busy} onClick={() => decide({ decision: 'project' })}>
                Project (p)
              </button>{' '}
              <button type="button" disabled={busy} onClick={() => decide({ decision: 'ignore' })}>
                Ignore (i)
              </button>{' '}
              <button type="button" disabled={busy} onClick={() => void next()}>
                Next (n)
              </button>
            </p>
          )}
          <p class="muted">Keys: j join the best · 1-9 join that candidate · p project · i ignore · n next</p>
          {done && <p role="status">{done}</p>}
          <ErrorBox error={error} />
        </>
      )}
    </section>
  );
}
