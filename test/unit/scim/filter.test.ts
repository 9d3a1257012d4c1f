import { ScimError } from '../../../lib/scim/errors';
import { matches, parseFilter, parsePatchPath, resolvePath, sortValue } from '../../../lib/scim/filter';
import { RESOURCE_TYPES, ENTERPRISE_USER } from '../../../lib/scim/schema';

const User = RESOURCE_TYPES.User;
const Group = RESOURCE_TYPES.Group;

const omalley = {
  id: 'A1',
  externalId: 'Ext-1',
  userName: 'OMalley',
  displayName: 'Kimberly Baker',
  active: true,
  name: { familyName: 'Employee', givenName: 'Darl' },
  emails: [
    { type: 'work', primary: true, value: 'anna33@example.com' },
    { type: 'other', value: 'anna33@gmail.com' },
  ],
  [ENTERPRISE_USER]: { department: 'Sales', manager: { value: 'B2' } },
  meta: { created: '2026-11-29T10:00:00.000Z', lastModified: '2026-11-29T11:00:00.000Z' },
};

const test = (f: string, r: Record<string, unknown> = omalley) => matches(parseFilter(User, f), r);

describe('SCIM filters', () => {
  it('compares strings case-insensitively, ids and externalIds exactly', () => {
    expect(test('userName eq "omalley"')).toBe(true);
    expect(test('USERNAME Eq "OMALLEY"')).toBe(true);
    expect(test('id eq "a1"')).toBe(false);
    expect(test('id eq "A1"')).toBe(true);
    expect(test('externalId eq "ext-1"')).toBe(false);
  });

  it('takes unquoted values as clients send them', () => {
    expect(test('userName sw O')).toBe(true);
    expect(test('name.FamilyName eq Employee and (emails.Value co example.com or emails.Value co example.org)')).toBe(true);
    expect(test('meta.Created gt 2015-10-10T14:38:21.8617979-07:00')).toBe(true);
    expect(test('meta.lastModified le "2026-11-29T10:30:00.0000000Z"')).toBe(false);
    expect(test('(ActiVe eq true) and meta.lastmodified ge "2021-09-23T19:35:41.8420572Z"')).toBe(true);
  });

  it('supports every operator, not, grouping and presence', () => {
    expect(test('displayName co "baker"')).toBe(true);
    expect(test('displayName ew "BAKER"')).toBe(true);
    expect(test('displayName ne "x"')).toBe(true);
    expect(test('userName gt "A" and userName lt "P"')).toBe(true);
    expect(test('userName ge "omalley" and userName le "omalley"')).toBe(true);
    expect(test('not (active eq true)')).toBe(false);
    expect(test('title pr')).toBe(false);
    expect(test('emails pr')).toBe(true);
    expect(test('active eq false or (userName eq "x" or displayName sw "Kim")')).toBe(true);
  });

  it('value filters on multi-valued attributes, and extension attributes by URN', () => {
    expect(test('emails[type eq "work" and value co "example.com"]')).toBe(true);
    expect(test('emails[type eq "home"]')).toBe(false);
    expect(test(`${ENTERPRISE_USER}:department eq "sales"`)).toBe(true);
    expect(test(`${ENTERPRISE_USER}:manager.value eq "B2"`)).toBe(true);
    expect(matches(parseFilter(Group, 'members[value eq "x"]'), { members: [{ value: 'X' }] })).toBe(true);
  });

  it('refuses what it cannot read with 400 invalidFilter', () => {
    for (const f of [
      '(('.repeat(5000) + 'userName eq "a"' + '))'.repeat(5000),
      '',
      'userName',
      'userName xx "a"',
      'nosuch eq 1',
      '(userName eq "a"',
      'userName eq "a',
      'active gt true',
    ]) {
      let err: unknown;
      try {
        test(f);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ScimError);
      expect((err as ScimError).status).toBe(400);
      expect((err as ScimError).scimType).toBe('invalidFilter');
    }
  });

  it('parses PATCH paths with filters and sub-attributes', () => {
    const p = parsePatchPath(User, 'emails[type eq "work"].value');
    expect(p.path).toMatchObject({ attr: 'emails', sub: 'value', extension: null });
    expect(p.filter).toBeDefined();
    expect(parsePatchPath(User, `${ENTERPRISE_USER}.manager`).path).toMatchObject({ attr: 'manager', extension: ENTERPRISE_USER });
    expect(parsePatchPath(Group, 'members[value eq "1"]').path.attr).toBe('members');
    expect(() => parsePatchPath(User, 'nosuch')).toThrow(ScimError);
  });
});

describe('SCIM sort values', () => {
  const key = (path: string, r: Record<string, unknown> = omalley) => sortValue(r, resolvePath(User, path, 'path'));

  it('strings without case, a multi-valued attribute by its primary value, dates as instants, extensions by URN', () => {
    expect(key('userName')).toBe('omalley');
    expect(key('id')).toBe('A1');
    expect(key('emails')).toBe('anna33@example.com');
    expect(key('emails', { emails: [{ value: 'B@x' }, { value: 'a@x' }] })).toBe('b@x');
    expect(key('name.familyName')).toBe('employee');
    expect(key('meta.lastModified')).toBe(Date.parse('2026-11-29T11:00:00.000Z'));
    expect(key(`${ENTERPRISE_USER}:department`)).toBe('sales');
    expect(key('active')).toBe(true);
    expect(key('title')).toBeUndefined();
  });
});
