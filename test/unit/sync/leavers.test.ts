import type { MeshObject } from '../../../lib/mesh/model';
import type { StoredConnector } from '../../../lib/storage/connectors';
import type { LeaverRecord } from '../../../lib/storage/leavers';
import type { Rule } from '../../../lib/storage/rules';
import { leaverView } from '../../../lib/api/leavers';
import { deprovisioningSettings } from '../../../lib/sync/deprovisioning';
import { SettingsReader } from '../../../lib/core/config';
import { clockStart, confirmedBy, deadlineMinuteMs, deadlineMinutesOf, markedDone, leaversSeen, leaverState, leaverTargets } from '../../../lib/sync/leavers';
import type { CsObject } from '../../../lib/sync/model';

/** The leaver clock's pure parts: which targets a deleted object leaves, the deadline, the state, the confirmation. */

const HR = 'aaaaaaaa-0000-4000-8000-000000000001';
const LDAP = 'bbbbbbbb-0000-4000-8000-000000000002';
const AD = 'cccccccc-0000-4000-8000-000000000003';
const KEPT = 'dddddddd-0000-4000-8000-000000000004';

const connector = (id: string, name: string, type: string, config: Record<string, unknown>): StoredConnector => ({
  id,
  name,
  type,
  status: 'active',
  lastSync: null,
  config,
  sealedSecrets: null,
  secretPaths: [],
  state: 'ready',
  pendingName: null,
  createdOn: '2026-01-01T00:00:00.000Z',
  updatedOn: '2026-01-01T00:00:00.000Z',
  etag: '*',
});
const outbound = (connectorId: string) => ({ ruleType: 'FlowRule', direction: 'outbound', connectorId }) as unknown as Rule;

const connectors = [
  connector(HR, 'HR', 'custom', {}),
  connector(LDAP, 'Directory', 'ldap', { deprovisioning: { deadlineMinutes: 15 } }),
  connector(AD, 'AD', 'active_directory', { deprovisioning: { action: 'disable', graceDays: 1 } }),
  connector(KEPT, 'Kept', 'ldap', { deprovisioning: { action: 'none' } }),
];
const rules = [outbound(LDAP), outbound(AD), outbound(KEPT)];

const ann: MeshObject = {
  id: '11111111-0000-4000-8000-000000000001',
  objectType: 'User',
  anchorValue: 'E1',
  createdOn: '2026-01-01T00:00:00.000Z',
  updatedOn: '2026-01-01T00:00:00.000Z',
  attributes: {
    givenName: { value: 'Ann', sourceConnectorId: HR, confidence: 50, updatedOn: '2026-01-01T00:00:00.000Z' },
    sn: { value: 'Lee', sourceConnectorId: HR, confidence: 50, updatedOn: '2026-01-01T00:00:00.000Z' },
  },
  contributions: {},
  links: { [HR]: 'h1', [LDAP]: 'uuid-1', [AD]: 'guid-1', [KEPT]: 'k-1' },
  relationships: [],
  pendingReferences: [],
};

describe('leaver targets and the leavers a deletion starts', () => {
  test('targets: connectors with outbound flows whose action is not none, with their deadline (default 60)', () => {
    const t = leaverTargets(connectors, rules);
    expect([...t.keys()].sort()).toEqual([LDAP, AD].sort());
    expect(t.get(LDAP)!.deadlineMinutes).toBe(15);
    expect(t.get(AD)!.deadlineMinutes).toBe(60);
    expect(deadlineMinutesOf({ deprovisioning: { deadlineMinutes: 2.5 } })).toBe(60);
  });

  test('a deadline minute lasts 60 s; the test hook shortens it in Development only, and a value out of range names the setting', () => {
    const hook = 'Leavers__TestHooks__DeadlineMinuteSeconds';
    expect(deadlineMinuteMs(new SettingsReader({}))).toBe(60_000);
    expect(deadlineMinuteMs(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '10' }))).toBe(10_000);
    expect(deadlineMinuteMs(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Production', [hook]: '10' }))).toBe(60_000);
    expect(deadlineMinuteMs(new SettingsReader({ [hook]: '10' }))).toBe(60_000);
    expect(() => deadlineMinuteMs(new SettingsReader({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', [hook]: '0' }))).toThrow(/DeadlineMinuteSeconds/);
  });

  test('one leaver per target the object was linked to (not the deleting source, not action none): seen now, deadline after the grace', () => {
    const at = new Date('2026-11-29T09:00:00.000Z');
    const out = leaversSeen([ann], leaverTargets(connectors, rules), { connectorId: HR, runId: 'run-1' }, at);
    expect(out.map((l) => l.connectorId).sort()).toEqual([LDAP, AD].sort());
    const ldap = out.find((l) => l.connectorId === LDAP)!;
    expect(ldap).toMatchObject({
      meshObjectId: ann.id,
      anchor: 'uuid-1',
      displayName: 'Ann Lee',
      sourceConnectorId: HR,
      seenRunId: 'run-1',
      operation: 'delete',
      reason: 'gone',
      seenOn: '2026-11-29T09:00:00.000Z',
      dueOn: null,
      deadlineOn: '2026-11-29T09:15:00.000Z',
      sentOn: null,
      confirmedOn: null,
    });
    // AD: disable after a day's grace; the deadline counts from the grace's end.
    expect(out.find((l) => l.connectorId === AD)).toMatchObject({
      operation: 'disable',
      dueOn: '2026-11-30T09:00:00.000Z',
      deadlineOn: '2026-11-30T10:00:00.000Z',
    });
  });
});

const record = (over: Partial<LeaverRecord> = {}): LeaverRecord => ({
  meshObjectId: ann.id,
  connectorId: LDAP,
  anchor: 'uuid-1',
  displayName: 'Ann Lee',
  objectType: 'User',
  sourceConnectorId: HR,
  operation: 'delete',
  reason: 'gone',
  seenOn: '2026-11-29T09:00:00.000Z',
  seenRunId: 'run-1',
  dueOn: null,
  deadlineOn: '2026-11-29T09:15:00.000Z',
  sentOn: null,
  sentRunId: null,
  confirmedOn: null,
  confirmedRunId: null,
  ...over,
});

describe('state, late and the clock', () => {
  test('pending until the deadline, late after it (computed at the read), done once confirmed', () => {
    expect(leaverState(record(), new Date('2026-11-29T09:15:00.000Z'))).toBe('pending');
    expect(leaverState(record(), new Date('2026-11-29T09:15:00.001Z'))).toBe('late');
    expect(leaverState(record({ confirmedOn: '2026-11-29T09:20:00.000Z' }), new Date('2026-11-29T09:30:00.000Z'))).toBe('done');
  });

  test('the view: late on a done leaver means confirmed after its deadline; seconds from the clock start (the grace end when later)', () => {
    const names = new Map([[LDAP, 'Directory']]);
    const now = new Date('2026-11-29T10:00:00.000Z');
    expect(leaverView(record({ confirmedOn: '2026-11-29T09:01:30.000Z' }), now, names)).toMatchObject({
      state: 'done',
      late: false,
      seconds: 90,
      connectorName: 'Directory',
      sourceConnectorName: null,
    });
    expect(leaverView(record({ confirmedOn: '2026-11-29T09:20:00.000Z' }), now, names)).toMatchObject({ state: 'done', late: true });
    expect(leaverView(record(), now, names)).toMatchObject({ state: 'late', late: true, seconds: null });
    const graced = record({ dueOn: '2026-11-29T09:30:00.000Z', confirmedOn: '2026-11-29T09:30:10.000Z' });
    expect(clockStart(graced)).toBe('2026-11-29T09:30:00.000Z');
    expect(leaverView(graced, now, names).seconds).toBe(10);
  });
});

describe('confirmation by an import of the target', () => {
  const row = (over: Partial<CsObject>): CsObject => ({
    anchor: 'uuid-1',
    objectType: 'User',
    attributes: {},
    hash: '',
    rulesHash: '',
    meshId: null,
    updatedOn: '2026-11-29T09:00:00.000Z',
    ...over,
  });
  const del = deprovisioningSettings({}, 'ldap');
  const dis = deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { employeeType: 'disabled' } } }, 'ldap');

  test('a delete: confirmed when the object is gone from the connector space or kept as deleted', () => {
    expect(confirmedBy(record(), undefined, del)).toBe(true);
    expect(confirmedBy(record(), row({ deleted: true }), del)).toBe(true);
    expect(confirmedBy(record(), row({ attributes: { uid: 'E1' } }), del)).toBe(false);
  });

  test('a disable: confirmed when the import shows the disable values (names and values compared without case)', () => {
    const r = record({ operation: 'disable' });
    expect(confirmedBy(r, row({ attributes: { EmployeeType: ['Disabled'] } }), dis)).toBe(true);
    expect(confirmedBy(r, row({ attributes: { employeeType: 'active' } }), dis)).toBe(false);
    expect(confirmedBy(r, undefined, dis)).toBe(false);
    // Active Directory's accountDisabled is never imported: the export's success is the confirmation.
    const ad = deprovisioningSettings({ deprovisioning: { action: 'disable' } }, 'active_directory');
    expect(confirmedBy(r, row({ attributes: {} }), ad)).toBe(true);
  });

  test('a leaver whose send was not recorded: confirmed only by its object there, marked by the export that deprovisioned it', () => {
    const r = record({ operation: 'disable', sentOn: null });
    const ad = deprovisioningSettings({ deprovisioning: { action: 'disable' } }, 'active_directory');
    const marked = { state: 'disabled' as const, reason: 'gone' as const, at: '2026-11-29T09:00:01.000Z' };
    // An AD account still there and enabled (an import that ran before the export sent the disable) is not done.
    expect(markedDone(r, row({ attributes: { employeeID: 'E1' } }), ad)).toBe(false);
    expect(markedDone(r, row({ attributes: {}, deprovisioned: marked }), ad)).toBe(true);
    expect(markedDone(r, undefined, ad)).toBe(false);
    expect(markedDone(r, row({ attributes: { employeeType: 'active' }, deprovisioned: marked }), dis)).toBe(false);
    expect(markedDone(r, row({ attributes: { employeeType: 'disabled' }, deprovisioned: marked }), dis)).toBe(true);
    const d = record({ sentOn: null });
    expect(markedDone(d, undefined, del)).toBe(false);
    expect(markedDone(d, row({ deleted: true }), del)).toBe(true);
    expect(markedDone(d, row({ attributes: { uid: 'E1' } }), del)).toBe(false);
  });
});
