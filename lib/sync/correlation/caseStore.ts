import type { AttributeValue } from '../../connectors/sdk';
import { encodeKey, decodeKey, isStatus, odata, table } from '../../storage/tables';
import { getJson, putJson, submitBatched } from '../../storage/tableUtil';
import type { CaseReason, RuleMatch } from './score';

/**
 * Correlation cases and manual decisions (docs/correlation.md).
 *
 * Table `CorrelationCases`: PartitionKey the connector id, RowKey the case id, which is the csObjectId of the
 * connector-space object it is about (lib/sync/space/csIds.ts): one case per connector object. A case that
 * opens again (an undone decision, a re-import that finds the object uncertain again) is the same row, open
 * again. Columns: `anchor`, `reason`, `state` (open, decided, closed), `top` (the best candidate's score, -1
 * without one), `count` (candidates), chunked JSON `o` (the object's summary) and `c` (the candidates),
 * `decision`, `meshId` (what a join decided), `dby`, `don` (who decided, when), `openedOn`, `updatedOn`. A lookup by id alone is a
 * query on the RowKey (cases are few: the uncertain objects of a first import).
 *
 * Table `CorrelationDecisions`: PartitionKey the connector id, RowKey the key-encoded anchor: what an operator
 * decided for the object (`mode`: join with `meshId`, project, ignore; `rules`: an undo not applied yet), `by`,
 * `on`, and `log` (JSON: every decision on the object, newest last, at most 50). The engine reads the
 * connector's decisions once per page (a partition query; decisions are few) and plans each decided object by
 * its decision instead of the rules.
 */
const CASES = 'CorrelationCases';
const DECISIONS = 'CorrelationDecisions';

export type CaseState = 'open' | 'decided' | 'closed';
export type Decision = 'join' | 'project' | 'ignore';

export interface CaseCandidate {
  meshObjectId: string;
  anchor: string;
  displayName: string;
  score: number;
  matched: RuleMatch[];
}

export interface CaseObject {
  anchor: string;
  dn: string | null;
  objectType: string;
  displayName: string;
  /** The values the join rules read (their source attributes). */
  attributes: Record<string, AttributeValue>;
}

export interface CorrelationCase {
  caseId: string;
  connectorId: string;
  csObjectId: string;
  object: CaseObject;
  candidates: CaseCandidate[];
  reason: CaseReason;
  state: CaseState;
  decision: Decision | null;
  /** The mesh object a `join` decision (or the rules, closing it) joined. */
  meshObjectId: string | null;
  decidedBy: string | null;
  decidedOn: string | null;
  openedOn: string;
  updatedOn: string;
}

export type DecisionMode = Decision | 'rules' | 'none';

export interface DecisionEntry {
  mode: DecisionMode | 'undo';
  meshId?: string;
  by: string;
  on: string;
  caseId?: string;
}

export interface ManualDecision {
  anchor: string;
  mode: DecisionMode;
  meshId?: string;
  by: string;
  on: string;
  /** The object's decisions, oldest first (the object's correlation history). */
  log: DecisionEntry[];
}

function toCaseEntity(c: CorrelationCase): Record<string, unknown> & { partitionKey: string; rowKey: string } {
  const e: Record<string, unknown> & { partitionKey: string; rowKey: string } = {
    partitionKey: c.connectorId,
    rowKey: c.caseId,
    anchor: c.object.anchor,
    reason: c.reason,
    state: c.state,
    top: c.candidates.length ? c.candidates[0].score : -1,
    count: c.candidates.length,
    decision: c.decision ?? '',
    meshId: c.meshObjectId ?? '',
    dby: c.decidedBy ?? '',
    don: c.decidedOn ?? '',
    openedOn: c.openedOn,
    updatedOn: c.updatedOn,
  };
  putJson(e, 'o', c.object);
  putJson(e, 'c', c.candidates);
  return e;
}

function fromCaseEntity(e: Record<string, unknown>): CorrelationCase {
  const str = (v: unknown) => (v === undefined || v === null || v === '' ? null : String(v));
  return {
    caseId: String(e.rowKey),
    connectorId: String(e.partitionKey),
    csObjectId: String(e.rowKey),
    object: getJson<CaseObject>(e, 'o') ?? {
      anchor: String(e.anchor ?? ''),
      dn: null,
      objectType: 'User',
      displayName: String(e.anchor ?? ''),
      attributes: {},
    },
    candidates: getJson<CaseCandidate[]>(e, 'c') ?? [],
    reason: String(e.reason) as CaseReason,
    state: String(e.state) as CaseState,
    decision: str(e.decision) as Decision | null,
    meshObjectId: str(e.meshId),
    decidedBy: str(e.dby),
    decidedOn: str(e.don),
    openedOn: String(e.openedOn ?? ''),
    updatedOn: String(e.updatedOn ?? ''),
  };
}

/** Write cases (whole rows, upserts: a page replayed writes the same cases again). */
export async function putCases(cases: readonly CorrelationCase[]): Promise<void> {
  if (!cases.length) return;
  const client = await table(CASES);
  await submitBatched(
    client,
    cases.map((c) => ['upsert', toCaseEntity(c), 'Replace']),
  );
}

/** Close cases the rules settled (a merge of the state columns: the case keeps what it showed). */
export async function closeCases(closes: readonly { connectorId: string; caseId: string; meshObjectId: string | null; on: string }[]): Promise<void> {
  if (!closes.length) return;
  const client = await table(CASES);
  await submitBatched(
    client,
    closes.map((c) => [
      'upsert',
      { partitionKey: c.connectorId, rowKey: c.caseId, state: 'closed', meshId: c.meshObjectId ?? '', dby: 'rules', don: c.on, updatedOn: c.on },
      'Merge',
    ]),
  );
}

/** Record an operator's decision on a case (a merge of the state columns). */
export async function decideCase(c: CorrelationCase, decision: Decision, meshObjectId: string | null, by: string, on: string): Promise<CorrelationCase> {
  const client = await table(CASES);
  await client.upsertEntity(
    { partitionKey: c.connectorId, rowKey: c.caseId, state: 'decided', decision, meshId: meshObjectId ?? '', dby: by, don: on, updatedOn: on },
    'Merge',
  );
  return { ...c, state: 'decided', decision, meshObjectId, decidedBy: by, decidedOn: on, updatedOn: on };
}

/** One case by id, or null. */
export async function getCase(caseId: string): Promise<CorrelationCase | null> {
  const client = await table(CASES);
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter: `RowKey eq ${odata(caseId)}` } })) return fromCaseEntity(e);
  return null;
}

/** One case of a connector by id (a point read), or null. */
export async function getConnectorCase(connectorId: string, caseId: string): Promise<CorrelationCase | null> {
  const client = await table(CASES);
  try {
    return fromCaseEntity(await client.getEntity<Record<string, unknown>>(connectorId, caseId));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

export interface CaseFilter {
  connectorId?: string;
  state?: CaseState;
  reason?: CaseReason;
  /** The best candidate's score at least this. */
  minScore?: number;
}

/** Every case that passes the filter (the service side: connector, state, reason, score), ordered by connector then id. */
export async function listCases(f: CaseFilter): Promise<CorrelationCase[]> {
  const client = await table(CASES);
  const parts: string[] = [];
  if (f.connectorId) parts.push(`PartitionKey eq ${odata(f.connectorId)}`);
  if (f.state) parts.push(`state eq ${odata(f.state)}`);
  if (f.reason) parts.push(`reason eq ${odata(f.reason)}`);
  if (f.minScore !== undefined) parts.push(`top ge ${f.minScore}`);
  const out: CorrelationCase[] = [];
  const queryOptions = parts.length ? { filter: parts.join(' and ') } : undefined;
  for await (const e of client.listEntities<Record<string, unknown>>(queryOptions ? { queryOptions } : {})) out.push(fromCaseEntity(e));
  return out.sort((a, b) =>
    a.connectorId < b.connectorId
      ? -1
      : a.connectorId > b.connectorId
        ? 1
        : a.openedOn < b.openedOn
          ? -1
          : a.openedOn > b.openedOn
            ? 1
            : a.caseId < b.caseId
              ? -1
              : 1,
  );
}

/** The open cases of a connector: anchor -> when each opened (one partition query, two columns). */
export async function openCaseAnchors(connectorId: string): Promise<Map<string, string>> {
  const client = await table(CASES);
  const out = new Map<string, string>();
  const filter = `PartitionKey eq ${odata(connectorId)} and state eq 'open'`;
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter, select: ['anchor', 'openedOn'] } }))
    out.set(String(e.anchor), String(e.openedOn));
  return out;
}

/** Remove every case and decision of a connector (its delete). */
export async function deleteConnectorCorrelation(connectorId: string): Promise<void> {
  for (const name of [CASES, DECISIONS]) {
    const client = await table(name);
    const actions: ['delete', { partitionKey: string; rowKey: string }][] = [];
    for await (const e of client.listEntities({ queryOptions: { filter: `PartitionKey eq ${odata(connectorId)}`, select: ['RowKey'] } }))
      actions.push(['delete', { partitionKey: connectorId, rowKey: String(e.rowKey) }]);
    await submitBatched(client, actions);
  }
}

function fromDecisionEntity(e: Record<string, unknown>): ManualDecision {
  const d: ManualDecision = {
    anchor: decodeKey(String(e.rowKey)),
    mode: String(e.mode) as DecisionMode,
    by: String(e.by ?? ''),
    on: String(e.on ?? ''),
    log: e.log ? (JSON.parse(String(e.log)) as DecisionEntry[]) : [],
  };
  if (e.meshId) d.meshId = String(e.meshId);
  return d;
}

/** The connector's decisions by anchor (one partition query). */
export async function listDecisions(connectorId: string): Promise<Map<string, ManualDecision>> {
  const client = await table(DECISIONS);
  const out = new Map<string, ManualDecision>();
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter: `PartitionKey eq ${odata(connectorId)}` } })) {
    const d = fromDecisionEntity(e);
    out.set(d.anchor, d);
  }
  return out;
}

export async function getDecision(connectorId: string, anchor: string): Promise<ManualDecision | null> {
  const client = await table(DECISIONS);
  try {
    return fromDecisionEntity(await client.getEntity<Record<string, unknown>>(connectorId, encodeKey(anchor)));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

/** Write an object's decision (its log carried on, newest last, at most 50 entries). */
export async function putDecision(connectorId: string, d: ManualDecision): Promise<void> {
  const client = await table(DECISIONS);
  await client.upsertEntity(
    {
      partitionKey: connectorId,
      rowKey: encodeKey(d.anchor),
      mode: d.mode,
      meshId: d.meshId ?? '',
      by: d.by,
      on: d.on,
      log: JSON.stringify(d.log.slice(-50)),
    },
    'Replace',
  );
}

/**
 * An undo the engine has applied (`mode: rules`): the row keeps the object's log only, with no decision (the
 * rules decide again). Rows with neither are not kept.
 */
export async function settleUndone(connectorId: string, anchors: readonly string[]): Promise<void> {
  if (!anchors.length) return;
  const client = await table(DECISIONS);
  for (const anchor of anchors) {
    const d = await getDecision(connectorId, anchor);
    if (!d || d.mode !== 'rules') continue;
    await client.upsertEntity(
      { partitionKey: connectorId, rowKey: encodeKey(anchor), mode: 'none', meshId: '', by: d.by, on: d.on, log: JSON.stringify(d.log.slice(-50)) },
      'Replace',
    );
  }
}
