import { configErrors } from '../../../lib/api/connectors';
import { deprovisioningChecks, deprovisioningSettings, disableValues, dueAt, enableValues, isDue } from '../../../lib/sync/deprovisioning';
import type { CsObject } from '../../../lib/sync/model';
import '../../../lib/schemas/connectors';

const ldap = { host: 'h', baseDN: 'dc=x', bindDN: 'cn=y', bindPassword: 'p' };
const sql = { dialect: 'postgres', host: 'h', database: 'd', user: 'u', password: 'p', table: 't', anchorColumn: 'id' };
const row = (attributes: CsObject['attributes'], exported?: CsObject['exported']): CsObject => ({
  anchor: 'a',
  objectType: 'User',
  attributes,
  ...(exported ? { exported } : {}),
  hash: 'h',
  rulesHash: 'r',
  meshId: 'm',
  updatedOn: '2026-01-01T00:00:00.000Z',
});

describe('deprovisioning settings', () => {
  it('defaults: delete, no grace, not on a false condition', () => {
    expect(deprovisioningSettings({}, 'ldap')).toEqual({
      action: 'delete',
      disableAttributes: {},
      graceDays: 0,
      onConditionFalse: false,
      orphanAction: 'disable',
    });
  });

  it('Active Directory disables through accountDisabled (bit 2 of the current userAccountControl) unless the setting names it', () => {
    expect(deprovisioningSettings({ deprovisioning: { action: 'disable' } }, 'active_directory').disableAttributes).toEqual({ accountDisabled: true });
    expect(
      deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { description: 'left' } } }, 'active_directory').disableAttributes,
    ).toEqual({
      accountDisabled: true,
      description: 'left',
    });
    expect(
      deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { userAccountControl: 514 } } }, 'active_directory').disableAttributes,
    ).toEqual({
      userAccountControl: 514,
    });
    expect(
      deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { employeeStatus: 'disabled' } } }, 'ldap').disableAttributes,
    ).toEqual({
      employeeStatus: 'disabled',
    });
  });

  it('a fraction of a day is a grace', () => {
    const s = deprovisioningSettings({ deprovisioning: { action: 'none', graceDays: 0.5, onConditionFalse: true } }, 'sql');
    expect(s).toMatchObject({ action: 'none', graceDays: 0.5, onConditionFalse: true });
    const now = new Date('2026-11-25T00:00:00.000Z');
    expect(dueAt(now, 0.5)).toBe('2026-11-25T12:00:00.000Z');
    expect(isDue(dueAt(now, 0.5), new Date('2026-11-25T11:59:59.000Z'))).toBe(false);
    expect(isDue(dueAt(now, 0.5), new Date('2026-11-25T12:00:00.000Z'))).toBe(true);
    expect(isDue(undefined, now)).toBe(false);
  });
});

describe('disable and enable values', () => {
  it('the disable keeps what the target showed for the attributes it writes, and the enable gives it back when no flow writes them', () => {
    const settings = deprovisioningSettings(
      { deprovisioning: { action: 'disable', disableAttributes: { employeeStatus: 'disabled', description: 'gone' } } },
      'ldap',
    );
    const d = disableValues(settings, row({ employeeStatus: 'active' }, { description: 'Engineer' }));
    expect(d).toEqual({ attributes: { employeeStatus: 'disabled', description: 'gone' }, previous: { employeeStatus: 'active', description: 'Engineer' } });
    const marker = { state: 'disabled' as const, reason: 'gone' as const, at: 'x', written: Object.keys(d.attributes), previous: d.previous };
    // employeeStatus has an outbound flow (its value wins), description none (its value before the disable).
    expect(enableValues(marker, { employeeStatus: 'rehired', title: 'Dev' })).toEqual({ employeeStatus: 'rehired', description: 'Engineer' });
  });

  it('an attribute the target did not have before the disable is cleared by the enable', () => {
    const settings = deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { employeeStatus: 'disabled' } } }, 'ldap');
    const d = disableValues(settings, row({}));
    expect(enableValues({ state: 'disabled', reason: 'gone', at: 'x', written: ['employeeStatus'], previous: d.previous }, {})).toEqual({
      employeeStatus: null,
    });
  });

  it('Active Directory: accountDisabled true, then false; no previous value of a pseudo-attribute', () => {
    const settings = deprovisioningSettings({ deprovisioning: { action: 'disable' } }, 'active_directory');
    const d = disableValues(settings, row({ userAccountControl: '66048' }));
    expect(d).toEqual({ attributes: { accountDisabled: true }, previous: {} });
    expect(enableValues({ state: 'disabled', reason: 'gone', at: 'x', written: ['accountDisabled'], previous: {} }, { givenName: 'Ann' })).toEqual({
      accountDisabled: false,
    });
  });
});

describe('config.deprovisioning validation', () => {
  it('every connector type that can export accepts it', () => {
    const d = { action: 'disable', disableAttributes: { employeeStatus: 'disabled' }, graceDays: 0.25, onConditionFalse: true };
    expect(configErrors('ldap', { ...ldap, deprovisioning: d })).toEqual([]);
    expect(configErrors('active_directory', { ...ldap, deprovisioning: { action: 'disable' } })).toEqual([]);
    expect(
      configErrors('custom', { implementation: 'file', settings: { path: '/tmp', anchorColumn: 'id' }, deprovisioning: { action: 'none' } }).filter((e) =>
        e.path.startsWith('/config/deprovisioning'),
      ),
    ).toEqual([]);
    expect(configErrors('sql', { ...sql, deprovisioning: d }).filter((e) => e.path.startsWith('/config/deprovisioning'))).toEqual([]);
  });

  it('bad values: every error listed, an enum with its allowed values', () => {
    const errors = configErrors('ldap', {
      ...ldap,
      deprovisioning: { action: 'archive', graceDays: -1, onConditionFalse: 'yes', disableAttributes: { a: { b: 1 } }, extra: 1 },
    });
    expect(errors).toEqual([
      { path: '/config/deprovisioning/extra', message: 'is not a known property' },
      { path: '/config/deprovisioning/action', message: 'must be one of: delete, disable, none' },
      { path: '/config/deprovisioning/disableAttributes/a', message: 'must be string or number or boolean' },
      { path: '/config/deprovisioning/graceDays', message: 'must be >= 0' },
      { path: '/config/deprovisioning/onConditionFalse', message: 'must be boolean' },
    ]);
    for (const type of ['sql', 'custom', 'active_directory'] as const) {
      const base = type === 'sql' ? sql : type === 'custom' ? { implementation: 'file' } : ldap;
      expect(configErrors(type, { ...base, deprovisioning: { action: 'park' } })).toContainEqual({
        path: '/config/deprovisioning/action',
        message: 'must be one of: delete, disable, none',
      });
    }
  });

  it('disable without disableAttributes names the field, except on Active Directory', () => {
    expect(configErrors('ldap', { ...ldap, deprovisioning: { action: 'disable' } })).toEqual([
      { path: '/config/deprovisioning/disableAttributes', message: expect.stringContaining("is required with action 'disable'") },
    ]);
    expect(deprovisioningChecks('sql', { deprovisioning: { action: 'disable' } })).toHaveLength(1);
    expect(deprovisioningChecks('custom', { deprovisioning: { action: 'disable' } })).toHaveLength(1);
    expect(deprovisioningChecks('active_directory', { deprovisioning: { action: 'disable' } })).toEqual([]);
    expect(deprovisioningChecks('ldap', { deprovisioning: { action: 'delete' } })).toEqual([]);
  });
});
